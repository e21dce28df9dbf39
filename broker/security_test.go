package broker_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
)

// frameSeen is the part of a server frame these tests look at.
type frameSeen struct {
	Type      string `json:"type"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
	raw       []byte
}

var probes atomic.Int64 // parallel tests probe at once

// answersTo writes a frame of an unknown type and returns every frame that
// arrives before its unknown_type answer: what the connection was sent in
// answer to the frames written before it.
func answersTo(t *testing.T, c *client.Client) []frameSeen {
	t.Helper()
	id := "probe-" + strconv.FormatInt(probes.Add(1), 10)
	if err := c.WriteJSON(ctxT(t), map[string]string{"type": "hm-test-probe", "requestId": id}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []frameSeen
	for {
		_, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the probe's answer: %v (got %v)", err, got)
		}
		var f frameSeen
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		f.raw = raw
		if f.Type == proto.TypeError && f.Code == string(status.CodeUnknownType) && f.RequestID == id {
			return got
		}
		got = append(got, f)
	}
}

func frames(fs []frameSeen) string {
	s := ""
	for _, f := range fs {
		s += string(f.raw) + " "
	}
	return s
}

// TestUnregisteredGetsNothing: every frame but register needs a registered
// client (SPEC §5.3). A client that never registers gets not_registered for
// each and no data: no health, no delivery state, no heartbeat, no journal
// events (it used to receive every ledger change, bodies included).
func TestUnregisteredGetsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	h.as("builder", true)
	if ack := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "secret plan", MessageID: "m-secret"}); !ack.OK {
		t.Fatalf("ack = %+v", ack)
	}
	anon := h.dial()
	tests := []proto.Frame{
		{Type: proto.TypeSubscribe, RequestID: "s", Topics: []string{"journal"}},
		{Type: proto.TypeHealthCheck, RequestID: "h", Target: "builder"},
		{Type: proto.TypeDeliveryCheck, RequestID: "d", MessageID: "m-secret"},
		{Type: proto.TypeHeartbeat, RequestID: "hb"},
		{Type: proto.TypeMessageAck, RequestID: "a", MessageID: "m-secret"},
		{Type: proto.TypeBackgroundAgent, RequestID: "bg", Action: "list"},
		{Type: proto.TypeSend, RequestID: "sd", Target: "builder", Content: "hi"},
		{Type: proto.TypeBroadcast, RequestID: "bc", Content: "hi"},
	}
	for _, f := range tests {
		t.Run(f.Type, func(t *testing.T) {
			if err := anon.WriteJSON(ctxT(t), f); err != nil {
				t.Fatal(err)
			}
			got := answersTo(t, anon)
			if len(got) != 1 || got[0].Type != proto.TypeError || got[0].Code != string(status.CodeNotRegistered) || got[0].RequestID != f.RequestID {
				t.Errorf("%s from an unregistered client: got %s, want one not_registered error", f.Type, frames(got))
			}
		})
	}
	// The subscribe above must not have subscribed it: a new ledger change
	// reaches no one unregistered.
	if ack := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "second secret"}); !ack.OK {
		t.Fatalf("ack = %+v", ack)
	}
	time.Sleep(200 * time.Millisecond)
	if got := answersTo(t, anon); len(got) != 0 {
		t.Errorf("unregistered client received %s", frames(got))
	}
	m, err := h.ledger.Get(context.Background(), "m-secret")
	if err != nil || m.Status == "acked" {
		t.Errorf("unregistered message-ack changed the row: %+v %v", m, err)
	}
}

// subscribeSynced subscribes c to the journal; frames are handled in order,
// so once a heartbeat is answered the subscription is active.
func subscribeSynced(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeSubscribe, Topics: []string{"journal"}}); err != nil {
		t.Fatal(err)
	}
	var hb proto.HeartbeatAck
	if err := c.Request(ctxT(t), proto.Frame{Type: proto.TypeHeartbeat, RequestID: "sub-sync"}, proto.TypeHeartbeatAck, &hb); err != nil {
		t.Fatal(err)
	}
}

// journalIDs reads journal events until one for last arrives and returns
// the message ids of all of them.
func journalIDs(t *testing.T, c *client.Client, last string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for {
		ev := decode[struct {
			Row map[string]any `json:"row"`
		}](t, nextOf(t, c, proto.TypeJournalEvent))
		id, _ := ev.Row["message_id"].(string)
		ids[id] = true
		if id == last {
			return ids
		}
	}
}

// TestSubscribeSeesOwnRows: the operator sees every ledger change; a role
// token (or an anonymous client, as its declared role) sees only rows
// where its role is the sender or a recipient (SPEC §5.3).
func TestSubscribeSeesOwnRows(t *testing.T) {
	t.Parallel()
	for _, anonymous := range []bool{false, true} {
		t.Run("anonymous="+strconv.FormatBool(anonymous), func(t *testing.T) {
			h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.AllowAnonymous = anonymous })
			op := h.as("user", false)
			subscribeSynced(t, op)
			oracle := h.dial()
			tok := h.tokens.Issue("oracle")
			if anonymous {
				tok = ""
			}
			if _, err := oracle.Register(ctxT(t), "oracle", tok, false); err != nil {
				t.Fatal(err)
			}
			subscribeSynced(t, oracle)
			arch := h.as("architect", false)
			builder := h.as("builder", false)
			msgs := []struct {
				c       *client.Client
				f       proto.Frame
				visible bool
			}{
				{arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "not for oracle", MessageID: "hidden-1"}, false},
				{builder, proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "nor this", MessageID: "hidden-2"}, false},
				{builder, proto.Frame{Type: proto.TypeSend, Target: "user", Content: "nor this", MessageID: "hidden-3"}, false},
				{arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "for oracle", MessageID: "to-oracle"}, true},
				{arch, proto.Frame{Type: proto.TypeBroadcast, Content: "for everyone", MessageID: "to-all"}, true},
				{oracle, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "from oracle", MessageID: "from-oracle"}, true},
			}
			for _, m := range msgs {
				if ack := send(t, m.c, m.f); !ack.OK {
					t.Fatalf("%s: %+v", m.f.MessageID, ack)
				}
			}
			last := msgs[len(msgs)-1].f.MessageID
			sawOp, sawOracle := journalIDs(t, op, last), journalIDs(t, oracle, last)
			for _, m := range msgs {
				if !sawOp[m.f.MessageID] {
					t.Errorf("operator did not see %s", m.f.MessageID)
				}
				if sawOracle[m.f.MessageID] != m.visible {
					t.Errorf("oracle saw %s: %v, want %v", m.f.MessageID, sawOracle[m.f.MessageID], m.visible)
				}
			}
		})
	}
}

// TestMessageAckOnlyByTarget: only the target role (a recipient of a
// group message) or the operator may message-ack; anyone else gets
// role_mismatch and the row is unchanged (SPEC §5.3).
func TestMessageAckOnlyByTarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	conns := map[string]*client.Client{"architect": arch}
	for _, r := range []string{"builder", "oracle", "builder-bg-1", "user"} {
		conns[r] = h.as(r, false)
	}
	tests := []struct {
		name   string
		f      proto.Frame // sent by architect
		acker  string
		wantOK bool
	}{
		{"another role", proto.Frame{Type: proto.TypeSend, Target: "builder"}, "oracle", false},
		{"the sender", proto.Frame{Type: proto.TypeSend, Target: "builder"}, "architect", false},
		{"a background slot", proto.Frame{Type: proto.TypeSend, Target: "builder"}, "builder-bg-1", false},
		{"the target", proto.Frame{Type: proto.TypeSend, Target: "builder"}, "builder", true},
		{"the operator", proto.Frame{Type: proto.TypeSend, Target: "builder"}, "user", true},
		{"a broadcast recipient", proto.Frame{Type: proto.TypeBroadcast}, "oracle", true},
		{"the broadcast's sender", proto.Frame{Type: proto.TypeBroadcast}, "architect", false},
		{"a slot, on a broadcast", proto.Frame{Type: proto.TypeBroadcast}, "builder-bg-1", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "ack-" + strconv.Itoa(i)
			f := tt.f
			f.Content, f.MessageID = "please ack "+id, id
			if ack := send(t, arch, f); !ack.OK {
				t.Fatalf("ack = %+v", ack)
			}
			c := conns[tt.acker]
			if err := c.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeMessageAck, MessageID: id, RequestID: "a-" + id}); err != nil {
				t.Fatal(err)
			}
			got := answersTo(t, c)
			m, err := h.ledger.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			acked := m.Status == "acked" && m.AckStatus == status.DeliveredVerified
			if tt.wantOK {
				if len(got) != 0 || !acked {
					t.Errorf("%s's message-ack: got %s, row %s/%s; want acked", tt.acker, frames(got), m.Status, m.AckStatus)
				}
				return
			}
			if len(got) != 1 || got[0].Code != string(status.CodeRoleMismatch) || got[0].RequestID != "a-"+id {
				t.Errorf("%s's message-ack: got %s, want one role_mismatch error", tt.acker, frames(got))
			}
			if acked {
				t.Errorf("%s's message-ack changed the row: %+v", tt.acker, m)
			}
		})
	}
}

// TestReservedIDs: ids in the hub's own namespaces cannot be chosen by
// clients (reserved_id, nothing stored). The bug: oracle, with only its
// pane token, sent with id telegram-in-1002, and the human's next Telegram
// update (1002, "STOP the deploy now") left no row at all.
func TestReservedIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	oracle := h.as("oracle", false)
	ids := []string{"telegram-in-1002", "TELEGRAM-IN-1003", "telegram-refused-1", "telegram-out-1-abcdef", "telegram-hm-1-abc-part-1",
		"session-2-architect", "reminder-hm-1-abc", "trg-0123456789abcdef", "sys-1"}
	for _, id := range ids {
		ack := send(t, oracle, proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "pre-empt", MessageID: id})
		if ack.OK || ack.Status != string(status.CodeReservedID) || ack.Error == nil || *ack.Error != string(status.CodeReservedID) || ack.Reason == "" {
			t.Errorf("client id %q: ack %+v, want reserved_id with a reason", id, ack)
		}
		if _, err := h.ledger.Get(context.Background(), id); err == nil {
			t.Errorf("client id %q was stored", id)
		}
	}
	// Trusted senders too: a trigger file naming a hub id is refused.
	_, err := h.b.Submit(context.Background(), broker.Submission{From: "user", Trusted: true, Channel: broker.ChannelTrigger,
		Target: "architect", Content: "from a file", MessageID: "telegram-in-5"})
	if proto.CodeOf(err) != status.CodeReservedID {
		t.Errorf("trigger file with id telegram-in-5: %v, want reserved_id", err)
	}
	// The hub's own row still lands, with the human's words.
	ack, err := h.b.Submit(context.Background(), broker.Submission{From: "user", Target: "architect", Content: "STOP the deploy now",
		MessageID: msgid.TelegramIn(1002), HubID: true, Channel: broker.ChannelTelegram, Direction: "inbound"})
	if err != nil || !ack.OK || ack.Dedupe {
		t.Fatalf("hub's telegram-in-1002: %+v %v", ack, err)
	}
	m, err := h.ledger.Get(context.Background(), "telegram-in-1002")
	if err != nil || !strings.HasSuffix(m.RawBody, "STOP the deploy now") || m.SenderRole != "user" {
		t.Fatalf("telegram-in-1002 row = %+v %v", m, err)
	}
	// Ids outside the namespaces are the client's to choose.
	for _, id := range []string{"telegram", "my-telegram-in-1", "sessions-1"} {
		if ack := send(t, oracle, proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "ok " + id, MessageID: id}); !ack.OK {
			t.Errorf("client id %q: %+v", id, ack)
		}
	}
}

// TestBadHeaderRefused: a header whose N is not below 2^53 is refused
// bad_header and never stored (it used to be stored as if it had no
// header, numbered by the hub with the bad header left in the body). The
// largest N, 2^53-1, is accepted with seq_gap; after it the hub has no
// number left for ARCH whose header would still parse, so a message
// without a header is refused bad_header rather than stored with one.
func TestBadHeaderRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	over := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "(ARCH #9007199254740992): x", MessageID: "over"})
	if over.OK || over.Status != string(status.CodeBadHeader) || over.Reason == "" {
		t.Fatalf("N = 2^53: %+v, want bad_header", over)
	}
	if _, err := h.ledger.Get(context.Background(), "over"); err == nil {
		t.Fatal("the bad header was stored")
	}
	// The refusal did not move the counter: the hub's next header parses.
	next := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "after", MessageID: "after"})
	if !next.OK || next.Seq != 1 {
		t.Fatalf("after the refusal: %+v", next)
	}
	if m, _ := h.ledger.Get(context.Background(), "after"); !parses(m.RawBody, "ARCH", 1) {
		t.Fatalf("hub header %q does not parse", m.RawBody)
	}
	top := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "(ARCH #9007199254740991): x", MessageID: "top"})
	if !top.OK || top.Seq != 9007199254740991 || strings.Join(top.Warnings, ",") != "seq_gap" {
		t.Fatalf("N = 2^53-1: %+v, want accepted with seq_gap", top)
	}
	last := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "no header", MessageID: "last"})
	if last.OK {
		if m, _ := h.ledger.Get(context.Background(), "last"); !parses(m.RawBody, "ARCH", last.Seq) {
			t.Fatalf("hub stored header %q, which does not parse", m.RawBody)
		}
	} else if last.Status != string(status.CodeBadHeader) {
		t.Fatalf("after 2^53-1: %+v", last)
	}
	// Other senders are unaffected.
	b := h.as("builder", false)
	if ack := send(t, b, proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "fine"}); !ack.OK || ack.Seq != 1 {
		t.Fatalf("builder: %+v", ack)
	}
}

func parses(content, role string, seq int64) bool {
	hd, _, ok := roles.ParseHeader(content)
	return ok && hd.Role == role && hd.Seq == seq
}

// TestAckThenRegisterListens: a message-ack is seen by every later frame of
// its connection but send and broadcast, register included. A client that
// acknowledged messages (read from its inbox) and then registers again as
// a listener is not handed them by the listener's replay. It was: register
// did not wait for the connection's pending acks, so the replay read the
// rows before the acks committed and sent the acknowledged messages.
func TestAckThenRegisterListens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "reg-ack-" + strconv.Itoa(i)
		if ack := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "read me " + ids[i], MessageID: ids[i]}); !ack.OK {
			t.Fatalf("send: %+v", ack)
		}
	}
	builder := h.as("builder", false)
	ctx := ctxT(t)
	for _, id := range ids {
		if err := builder.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := builder.WriteJSON(ctx, proto.Frame{Type: proto.TypeRegister, Role: "builder", Token: h.tokens.Issue("builder"), Listen: true}); err != nil {
		t.Fatal(err)
	}
	// A marker sent after the listener registered arrives after its replay.
	nextOf(t, builder, proto.TypeRegistered)
	send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "marker", MessageID: "reg-ack-marker"})
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		typ, raw, err := builder.Next(rctx)
		if err != nil {
			t.Fatalf("waiting for the marker: %v", err)
		}
		if typ != proto.TypeMessage {
			continue
		}
		m := decode[proto.Message](t, raw)
		if m.MessageID == "reg-ack-marker" {
			return
		}
		t.Errorf("acknowledged %s handed to the listener", m.MessageID)
	}
}

// TestDeliveryCheckOwnRows: delivery-check answers a role only for messages
// it may read (it sent or received them, as query get and subscribe): for
// any other it is known:false, as for an id the ledger never had. It told
// any registered role the status, target and seq of every message.
func TestDeliveryCheckOwnRows(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	for _, f := range []proto.Frame{
		{Type: proto.TypeSend, Target: "oracle", Content: "for oracle", MessageID: "to-oracle"},
		{Type: proto.TypeBroadcast, Content: "for everyone", MessageID: "to-all"},
	} {
		if ack := send(t, arch, f); !ack.OK {
			t.Fatalf("%s: %+v", f.MessageID, ack)
		}
	}
	builder := h.as("builder", false)
	if ack := send(t, builder, proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "to arch", MessageID: "to-arch"}); !ack.OK {
		t.Fatalf("to-arch: %+v", ack)
	}
	clients := map[string]*client.Client{"architect": arch, "builder": builder, "oracle": h.as("oracle", false), "user": h.as("user", false)}
	for _, tc := range []struct {
		who, id string
		known   bool
	}{
		{"architect", "to-oracle", true}, // its sender
		{"oracle", "to-oracle", true},    // its target
		{"builder", "to-oracle", false},  // neither
		{"user", "to-oracle", true},      // the operator
		{"builder", "to-all", true},      // a broadcast reached it
		{"oracle", "to-arch", false},
		{"architect", "to-arch", true},
		{"builder", "never-sent", false},
	} {
		t.Run(tc.who+"/"+tc.id, func(t *testing.T) {
			var dc proto.DeliveryResult
			if err := clients[tc.who].Request(ctxT(t), proto.Frame{Type: proto.TypeDeliveryCheck, RequestID: "d-" + tc.id, MessageID: tc.id}, proto.TypeDeliveryCheckResult, &dc); err != nil {
				t.Fatal(err)
			}
			if dc.Known != tc.known || dc.MessageID != tc.id {
				t.Fatalf("delivery-check = %+v, want known %v", dc, tc.known)
			}
			if !dc.Known && (dc.Status != "" || dc.Target != "" || dc.Seq != 0 || dc.AckStatus != "") {
				t.Fatalf("an unknown answer tells %+v", dc)
			}
		})
	}
}
