package broker_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
)

// queuePanes keeps what is delivered to a pane in its queue (nothing is
// typed) and lets claims take it: a stand-in for the hub's panes.
type queuePanes struct {
	mu    sync.Mutex
	queue map[string][]broker.PaneDelivery
	// midTurn records each claim's midTurn, in order.
	midTurn []bool
}

func newQueuePanes() *queuePanes { return &queuePanes{queue: map[string][]broker.PaneDelivery{}} }

func withQueuePanes(p *queuePanes) harnessOpt {
	return func(_ *broker.Config, d *broker.Deps) { d.Panes = p }
}

func (p *queuePanes) Hosted(role string) bool { return role != "user" }
func (p *queuePanes) Deliver(role string, d broker.PaneDelivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue[role] = append(p.queue[role], d)
}
func (p *queuePanes) Health(string) (string, time.Time, bool) { return "idle", time.Now(), true }

func (p *queuePanes) Claim(role string, max int, midTurn bool) []broker.PaneClaim {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.midTurn = append(p.midTurn, midTurn)
	var out []broker.PaneClaim
	var kept []broker.PaneDelivery
	for _, d := range p.queue[role] {
		if len(out) < max && d.Claimable {
			var once sync.Once
			out = append(out, broker.PaneClaim{MessageID: d.MessageID, Text: "[AGENT MSG] " + d.Content, Urgent: d.Urgent,
				Return: func() { once.Do(func() { p.Deliver(role, d) }) }})
			continue
		}
		kept = append(kept, d)
	}
	p.queue[role] = kept
	return out
}

// queued returns the ids in role's queue, sorted.
func (p *queuePanes) queued(role string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, d := range p.queue[role] {
		ids = append(ids, d.MessageID)
	}
	slices.Sort(ids)
	return ids
}

// request sends a frame of type typ with payload and decodes its
// response's result.
func request[T any](t *testing.T, c *client.Client, typ, requestID string, payload any) T {
	t.Helper()
	var out T
	if err := respond(t, c, proto.Frame{Type: typ, RequestID: requestID}, payload, &out); err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	return out
}

func messageIDs(ms []proto.ClaimedMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return out
}

// TestClaim: a claim takes what the role's pane has queued and not begun
// to type; the claim-ack records what the hook emitted as delivered.context
// and gives the rest back to the pane, as do a connection that ends and a
// lease that runs out. Messages a listener was handed are not claimable.
func TestClaim(t *testing.T) {
	t.Parallel()
	hook := "claude UserPromptSubmit"
	tests := []struct {
		name   string
		listen bool          // a listener for builder is registered first
		lease  time.Duration // ClaimLease; 0: a minute
		// settle ends the claim of m1 and m2 and returns the ids the
		// claim-ack named as delivered (nil when there was none).
		settle        func(t *testing.T, q *queuePanes, c *client.Client) []string
		wantDelivered []string
		wantQueued    []string
	}{
		{name: "AckNamesSome", settle: func(t *testing.T, q *queuePanes, c *client.Client) []string {
			r := request[proto.ClaimAckResult](t, c, proto.TypeClaimAck, "a1", proto.ClaimAck{MessageIDs: []string{"m1", "nope", "m1"}})
			if !slices.Equal(r.Delivered, []string{"m1"}) || !slices.Equal(r.Returned, []string{"m2"}) || !slices.Equal(r.Unknown, []string{"nope"}) {
				t.Errorf("claim-ack result %+v, want delivered [m1], returned [m2], unknown [nope]", r)
			}
			return r.Delivered
		}, wantDelivered: []string{"m1"}, wantQueued: []string{"m2", "m3"}},
		{name: "ConnectionEnds", settle: func(t *testing.T, q *queuePanes, c *client.Client) []string {
			c.CloseNow()
			return nil
		}, wantQueued: []string{"m1", "m2", "m3"}},
		{name: "LeaseRunsOut", settle: func(t *testing.T, q *queuePanes, c *client.Client) []string {
			poll.For(t, 10*time.Second, func() error {
				return poll.Want(len(q.queued("builder")) == 3, "the lease to give m1 and m2 back, queue %v", q.queued("builder"))
			})
			r := request[proto.ClaimAckResult](t, c, proto.TypeClaimAck, "a1", proto.ClaimAck{MessageIDs: []string{"m1"}})
			if len(r.Delivered) != 0 || !slices.Equal(r.Unknown, []string{"m1"}) {
				t.Errorf("claim-ack after the lease %+v, want m1 unknown and nothing delivered", r)
			}
			return nil
		}, lease: 100 * time.Millisecond, wantQueued: []string{"m1", "m2", "m3"}},
		{name: "ListenerHasThem", listen: true, wantQueued: []string{"m1", "m2", "m3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := newQueuePanes()
			lease := cmp.Or(tt.lease, time.Minute)
			h := newHarness(t, withQueuePanes(q), func(c *broker.Config, _ *broker.Deps) { c.ClaimLease = lease })
			if tt.listen {
				h.as("builder", true)
			}
			arch := h.as("architect", false)
			for _, id := range []string{"m1", "m2", "m3"} {
				send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "hello " + id, MessageID: id})
			}
			builder := h.as("builder", false)
			res := request[proto.ClaimResult](t, builder, proto.TypeClaim, "c1", proto.ClaimRequest{Max: 2, Hook: hook})
			if tt.listen {
				if len(res.Messages) != 0 {
					t.Fatalf("claimed %v, which a listener was handed", messageIDs(res.Messages))
				}
				return
			}
			if got := messageIDs(res.Messages); !slices.Equal(got, []string{"m1", "m2"}) || res.Role != "builder" || res.LeaseMs != lease.Milliseconds() {
				t.Fatalf("claim result %+v, want m1 and m2 for builder with a %v lease", res, lease)
			}
			if want := "[AGENT MSG] (ARCH #1): hello m1"; res.Messages[0].Text != want {
				t.Errorf("text %q, want the pane's rendering %q", res.Messages[0].Text, want)
			}
			if got := q.queued("builder"); !slices.Equal(got, []string{"m3"}) && tt.lease == 0 {
				t.Fatalf("queue while claimed %v, want [m3]", got)
			}
			delivered := tt.settle(t, q, builder)
			if !slices.Equal(delivered, tt.wantDelivered) {
				t.Errorf("delivered %v, want %v", delivered, tt.wantDelivered)
			}
			poll.For(t, 10*time.Second, func() error {
				return poll.Want(slices.Equal(q.queued("builder"), tt.wantQueued), "queue %v, want %v", q.queued("builder"), tt.wantQueued)
			})
			for _, id := range []string{"m1", "m2", "m3"} {
				m, err := h.ledger.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tt.wantDelivered, id) {
					if m.Status != status.Routed || m.AckStatus != status.DeliveredContext {
						t.Errorf("%s: %s/%s, want routed/delivered.context", id, m.Status, m.AckStatus)
					}
					evs, err := h.ledger.Events(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					last := evs[len(evs)-1]
					if last.Event != status.EventContext || !strings.Contains(string(last.Detail), `"hook":"`+hook+`"`) || !strings.Contains(string(last.Detail), `"pane":"builder"`) {
						t.Errorf("%s: last event %s %s, want context naming the pane and the hook", id, last.Event, last.Detail)
					}
					continue
				}
				if m.Status != status.Brokered || m.AckStatus == status.DeliveredContext {
					t.Errorf("%s: %s/%s, want still brokered (the pane types it)", id, m.Status, m.AckStatus)
				}
			}
		})
	}
}

// TestClaimWakesWaitingSender: a sender waiting for a definitive stage
// (waitMs) gets delivered.context as soon as a hook's claim-ack records
// it. Before the fix the ACK stayed accepted.unverified: the ACK's status
// vocabulary did not know delivered.context.
func TestClaimWakesWaitingSender(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withQueuePanes(newQueuePanes()))
	arch := h.as("architect", false)
	builder := h.as("builder", false)
	acked := make(chan proto.Ack, 1)
	go func() {
		ack, _, err := arch.Send(context.Background(), proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "wait for it", MessageID: "w1", WaitMs: 20000})
		if err != nil {
			t.Error(err)
		}
		acked <- ack
	}()
	var res proto.ClaimResult
	poll.For(t, 10*time.Second, func() error {
		res = request[proto.ClaimResult](t, builder, proto.TypeClaim, "c1", proto.ClaimRequest{})
		return poll.Want(len(res.Messages) == 1, "the message to be queued")
	})
	request[proto.ClaimAckResult](t, builder, proto.TypeClaimAck, "a1", proto.ClaimAck{MessageIDs: []string{"w1"}})
	select {
	case ack := <-acked:
		if ack.Status != string(status.DeliveredContext) || !ack.OK || ack.Verified {
			t.Errorf("ACK %+v, want ok with status delivered.context, not verified", ack)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting sender got no ACK after the claim-ack")
	}
}

// TestClaimRequests: the session context on request, a role without a pane,
// and refusals.
func TestClaimRequests(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local)
	q := newQueuePanes()
	h := newHarness(t, withQueuePanes(q), func(c *broker.Config, _ *broker.Deps) { c.SessionStarted = started })
	builder := h.as("builder", false)
	// midTurn reaches the pane, which refuses such a claim while an
	// interrupt it sent is in flight (agent.Pane.Claim).
	request[proto.ClaimResult](t, builder, proto.TypeClaim, "m1", proto.ClaimRequest{MidTurn: true})
	request[proto.ClaimResult](t, builder, proto.TypeClaim, "m2", proto.ClaimRequest{})
	q.mu.Lock()
	if !slices.Equal(q.midTurn, []bool{true, false}) {
		t.Errorf("the pane saw midTurn %v, want [true false]", q.midTurn)
	}
	q.mu.Unlock()
	res := request[proto.ClaimResult](t, builder, proto.TypeClaim, "c1", proto.ClaimRequest{Max: -1, Session: true})
	s := res.Session
	if s == nil || s.Role != "builder" || s.Header != "BUILDER" || s.SessionID != "app-session-1" || s.StartID != "session-1-builder" ||
		s.Line != "# SQUIDRUN SESSION: Builder - Started 2026-01-02" || !strings.Contains(s.Brief, "You are the Builder") {
		t.Errorf("session context %+v", s)
	}
	user := h.as("user", false)
	if res := request[proto.ClaimResult](t, user, proto.TypeClaim, "c2", proto.ClaimRequest{Session: true}); len(res.Messages) != 0 || res.Session != nil {
		t.Errorf("user's claim %+v, want nothing", res)
	}
	// A state no pane knows, on an ack of nothing held: answered as any
	// ack, the state ignored.
	if res := request[proto.ClaimAckResult](t, builder, proto.TypeClaimAck, "c3", proto.ClaimAck{MessageIDs: []string{"nope"}, State: "dancing"}); len(res.Delivered) != 0 || len(res.Unknown) != 1 {
		t.Errorf("ack with an unknown state: %+v", res)
	}
	for _, tc := range []struct {
		name     string
		c        *client.Client
		frame    string
		wantCode status.Code
	}{
		{"unregistered", h.dial(), `{"type":"claim","requestId":"r1"}`, status.CodeNotRegistered},
		{"unknown field", builder, `{"type":"claim","requestId":"r1","payload":{"bogus":1}}`, status.CodeBadRequest},
		{"bad ack payload", builder, `{"type":"claim-ack","requestId":"r1","payload":{"messageIds":"m1"}}`, status.CodeBadRequest},
		{"ack state not a string", builder, `{"type":"claim-ack","requestId":"r1","payload":{"messageIds":[],"state":7}}`, status.CodeBadRequest},
	} {
		if err := tc.c.WriteText(ctxT(t), []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		raw := nextOf(t, tc.c, proto.TypeError)
		if e := decode[proto.ErrorFrame](t, raw); e.Code != tc.wantCode || e.RequestID != "r1" {
			t.Errorf("%s: %s, want %s for r1", tc.name, raw, tc.wantCode)
		}
	}
}

// TestReceipt: a prompt's receipt makes each typed message it names
// delivered.verified (event acked naming the hook), two in one prompt are
// recorded as a merge (event merged naming the other), and a marker of a
// message a hook put in the agent's context (delivered.context) proves
// nothing: that prompt carried hm's own hook output. Neither does one for
// another role's message.
func TestReceipt(t *testing.T) {
	t.Parallel()
	q := newQueuePanes()
	h := newHarness(t, withQueuePanes(q))
	arch := h.as("architect", false)
	for _, id := range []string{"c1", "t1", "t2", "t3"} {
		send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "hello " + id, MessageID: id})
	}
	send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "not yours", MessageID: "o1"})
	builder := h.as("builder", false)
	claim := request[proto.ClaimResult](t, builder, proto.TypeClaim, "c", proto.ClaimRequest{Max: 1, Hook: "gemini AfterAgent"})
	if got := messageIDs(claim.Messages); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("claimed %v, want [c1]", got)
	}
	request[proto.ClaimAckResult](t, builder, proto.TypeClaimAck, "a", proto.ClaimAck{MessageIDs: []string{"c1"}})
	const hook = "gemini BeforeAgent"
	for _, tc := range []struct {
		ids      []string
		verified []string
		merged   bool
		ignored  []string
	}{
		{ids: []string{"c1"}, verified: []string{}, ignored: []string{"c1"}},
		{ids: []string{"t1", "t1", "o1", "nope"}, verified: []string{"t1"}, ignored: []string{"o1", "nope"}},
		{ids: []string{"t2", "c1", "t3"}, verified: []string{"t2", "t3"}, merged: true, ignored: []string{"c1"}},
	} {
		r := request[proto.ReceiptResult](t, builder, proto.TypeReceipt, "r", proto.Receipt{MessageIDs: tc.ids, Hook: hook})
		if !slices.Equal(r.Verified, tc.verified) || r.Merged != tc.merged || !slices.Equal(r.Ignored, tc.ignored) {
			t.Errorf("receipt %v: %+v, want verified %v, merged %v, ignored %v", tc.ids, r, tc.verified, tc.merged, tc.ignored)
		}
	}
	for _, tc := range []struct {
		id     string
		ack    status.Stage
		event  status.Event
		detail string
	}{
		{"c1", status.DeliveredContext, status.EventContext, `"hook":"gemini AfterAgent"`},
		{"t1", status.DeliveredVerified, status.EventAcked, `"hook":"gemini BeforeAgent"`},
		{"t2", status.DeliveredVerified, status.EventMerged, `"with":["t3"]`},
		{"t3", status.DeliveredVerified, status.EventMerged, `"with":["t2"]`},
		{"o1", "", status.EventBrokered, ""},
	} {
		m, err := h.ledger.Get(context.Background(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := h.ledger.Events(context.Background(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if tc.ack != "" && m.AckStatus != tc.ack || last.Event != tc.event || !strings.Contains(string(last.Detail), tc.detail) {
			t.Errorf("%s: %s, last event %s %s; want %s, %s with %s", tc.id, m.AckStatus, last.Event, last.Detail, tc.ack, tc.event, tc.detail)
		}
	}
}

// TestRecordPrinted: a hook note's ids (what a hook printed under a hub
// that died before its claim-ack) become delivered.context only when the
// message is the note's role's, was brokered before the note and is still
// brokered and untouched; anything that went on meanwhile (typed, stuck,
// acked), another role's message, an unknown id and a second note for the
// same id are left alone.
func TestRecordPrinted(t *testing.T) {
	t.Parallel()
	q := newQueuePanes()
	h := newHarness(t, withQueuePanes(q))
	ctx := context.Background()
	arch := h.as("architect", false)
	for _, id := range []string{"p1", "p2", "typed", "stuck", "acked", "late"} {
		send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "hello " + id, MessageID: id})
	}
	send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "not builder's", MessageID: "o1"})
	for _, c := range []journal.Change{journal.Typed("typed", "builder"), journal.Stuck("stuck", "builder", errors.New("no echo"))} {
		if _, err := h.ledger.Advance(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	builder := h.as("builder", false)
	request[proto.ReceiptResult](t, builder, proto.TypeReceipt, "r", proto.Receipt{MessageIDs: []string{"acked"}, Hook: "claude UserPromptSubmit"})
	now := time.Now().UnixMilli()
	for _, tc := range []struct {
		name string
		atMs int64
		ids  []string
		want []string
	}{
		{"a note", now, []string{"p2", "p1", "p1", "typed", "stuck", "acked", "o1", "nope"}, []string{"p1", "p2"}},
		{"the same ids again", now, []string{"p1", "p2"}, nil},
		{"written before the message was brokered", 1, []string{"late"}, nil},
	} {
		got, err := h.b.RecordPrinted("builder", "claude Stop", tc.atMs, tc.ids)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: RecordPrinted = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		id  string
		ack status.Stage
	}{
		{"p1", status.DeliveredContext}, {"p2", status.DeliveredContext}, {"typed", status.Typed}, {"stuck", status.Stuck},
		{"acked", status.DeliveredVerified}, {"late", ""}, {"o1", ""},
	} {
		m, err := h.ledger.Get(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if m.AckStatus != tc.ack {
			t.Errorf("%s: %s/%s, want ack status %q", tc.id, m.Status, m.AckStatus, tc.ack)
		}
	}
	evs, err := h.ledger.Events(ctx, "p1")
	if err != nil || !strings.Contains(string(evs[len(evs)-1].Detail), `"from":"hook note"`) {
		t.Errorf("p1's last event %v %v, want context from the hook note", evs, err)
	}
}
