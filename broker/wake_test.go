package broker_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
)

// waitingClaim sends a claim that waits up to wait, and returns where its
// answer will arrive. The answer is read with a context of its own: a
// cancelled read would close the connection.
func waitingClaim(t *testing.T, c *client.Client, id string, wait time.Duration) <-chan proto.ClaimResult {
	t.Helper()
	return waitingClaimSince(t, c, id, wait, time.Time{})
}

// waitingClaimSince is waitingClaim for a hook whose stop happened at
// since (zero: not said).
func waitingClaimSince(t *testing.T, c *client.Client, id string, wait time.Duration, since time.Time) <-chan proto.ClaimResult {
	t.Helper()
	req := proto.ClaimRequest{Hook: "claude Stop --wait", WaitMs: wait.Milliseconds()}
	if !since.IsZero() {
		req.WaitSinceMs = since.UnixMilli()
	}
	payload, _ := json.Marshal(req)
	if err := c.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeClaim, RequestID: id, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	out := make(chan proto.ClaimResult, 1)
	go func() {
		defer close(out)
		raw, err := c.Await(context.Background(), proto.TypeResponse, id, "")
		if err != nil {
			return // the connection ended: no answer
		}
		var resp struct {
			Result proto.ClaimResult `json:"result"`
		}
		if json.Unmarshal(raw, &resp) == nil {
			out <- resp.Result
		}
	}()
	return out
}

func answerOf(t *testing.T, ch <-chan proto.ClaimResult) proto.ClaimResult {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("the waiting claim's connection ended with no answer")
		}
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting claim got no answer")
	}
	return proto.ClaimResult{}
}

// TestClaimWaits: a claim with waitMs (Claude Code's asyncRewake Stop hook)
// takes the first message that becomes claimable for its role — queued
// after it began to wait, queued before, or given back by another hook —
// and is released empty, saying why, when it times out, a newer claim of
// the role waits, or a hook reports the role busy. What a listener was
// handed never wakes it.
func TestClaimWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run starts builder's waiting claim(s) and what answers them; it
		// returns the answer the test checks.
		run          func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult
		wantIDs      []string
		wantReleased proto.Released
	}{
		{name: "MessageArrives", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			ch := waitingClaim(t, h.as("builder", false), "w1", time.Minute)
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "wake up", MessageID: "m1"})
			return answerOf(t, ch)
		}, wantIDs: []string{"m1"}},
		{name: "AlreadyQueued", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "waiting", MessageID: "m1"})
			return answerOf(t, waitingClaim(t, h.as("builder", false), "w1", time.Minute))
		}, wantIDs: []string{"m1"}},
		{name: "GivenBack", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "taken", MessageID: "m1"})
			other := h.as("builder", false)
			if r := request[proto.ClaimResult](t, other, proto.TypeClaim, "c1", proto.ClaimRequest{}); !slices.Equal(messageIDs(r.Messages), []string{"m1"}) {
				t.Fatalf("first claim %+v, want m1", r)
			}
			ch := waitingClaim(t, h.as("builder", false), "w1", time.Minute)
			other.CloseNow() // gone without its claim-ack: m1 goes back
			return answerOf(t, ch)
		}, wantIDs: []string{"m1"}},
		{name: "Timeout", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			return answerOf(t, waitingClaim(t, h.as("builder", false), "w1", 100*time.Millisecond))
		}, wantReleased: proto.ReleasedTimeout},
		{name: "ListenerHasIt", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			h.as("builder", true)
			ch := waitingClaim(t, h.as("builder", false), "w1", 500*time.Millisecond)
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "heard", MessageID: "m1"})
			return answerOf(t, ch)
		}, wantReleased: proto.ReleasedTimeout},
		{name: "Superseded", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			first := waitingClaim(t, h.as("builder", false), "w1", time.Minute)
			second := waitingClaim(t, h.as("builder", false), "w2", time.Minute)
			r := answerOf(t, first)
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "for the newest", MessageID: "m1"})
			if r2 := answerOf(t, second); !slices.Equal(messageIDs(r2.Messages), []string{"m1"}) {
				t.Errorf("newer waiting claim %+v, want m1", r2)
			}
			return r
		}, wantReleased: proto.ReleasedSuperseded},
		{name: "Busy", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			ch := waitingClaim(t, h.as("builder", false), "w1", time.Minute)
			// Another role at work releases nothing of builder's.
			request[proto.ClaimResult](t, h.as("oracle", false), proto.TypeClaim, "c0", proto.ClaimRequest{Max: -1, State: proto.PaneStateBusy})
			request[proto.ClaimResult](t, h.as("builder", false), proto.TypeClaim, "c1", proto.ClaimRequest{Max: -1, State: proto.PaneStateBusy})
			return answerOf(t, ch)
		}, wantReleased: proto.ReleasedBusy},
		{name: "BusyBeforeItArrived", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			// The stop, then a prompt (busy) that reaches the hub before
			// the stop's waiting claim does: the agent is at work.
			stop := time.Now().Add(-time.Second)
			request[proto.ClaimResult](t, h.as("builder", false), proto.TypeClaim, "c1", proto.ClaimRequest{Max: -1, State: proto.PaneStateBusy})
			return answerOf(t, waitingClaimSince(t, h.as("builder", false), "w1", time.Minute, stop))
		}, wantReleased: proto.ReleasedBusy},
		{name: "BusyBeforeItsStop", run: func(t *testing.T, h *harness, arch *client.Client) proto.ClaimResult {
			// A prompt of the turn that this stop ended does not count.
			request[proto.ClaimResult](t, h.as("builder", false), proto.TypeClaim, "c1", proto.ClaimRequest{Max: -1, State: proto.PaneStateBusy})
			stop := time.Now().Add(time.Second)
			ch := waitingClaimSince(t, h.as("builder", false), "w1", time.Minute, stop)
			send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "after the stop", MessageID: "m1"})
			return answerOf(t, ch)
		}, wantIDs: []string{"m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, withQueuePanes(newQueuePanes()), func(c *broker.Config, _ *broker.Deps) { c.ClaimLease = time.Minute })
			arch := h.as("architect", false)
			r := tt.run(t, h, arch)
			if got := messageIDs(r.Messages); !slices.Equal(got, tt.wantIDs) || r.Released != tt.wantReleased || r.Role != "builder" {
				t.Errorf("answer %+v (messages %v), want messages %v released %q for builder", r, got, tt.wantIDs, tt.wantReleased)
			}
		})
	}
}

// TestClaimWaitEndsWithConnection: a waiting claim whose connection ends
// is forgotten (goleak checks its goroutine), and takes nothing: the
// message sent afterwards stays queued for the pane.
func TestClaimWaitEndsWithConnection(t *testing.T) {
	t.Parallel()
	q := newQueuePanes()
	h := newHarness(t, withQueuePanes(q))
	builder := h.as("builder", false)
	ch := waitingClaim(t, builder, "w1", time.Minute)
	builder.CloseNow()
	if r, ok := <-ch; ok {
		t.Fatalf("answer %+v after the connection ended", r)
	}
	send(t, h.as("architect", false), proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "still queued", MessageID: "m1"})
	// A claim that does not wait gets it: the ended claim kept nothing
	// (had it taken m1 as the connection ended, it gave it back).
	later := h.as("builder", false)
	poll.For(t, 10*time.Second, func() error {
		r := request[proto.ClaimResult](t, later, proto.TypeClaim, "c1", proto.ClaimRequest{})
		return poll.Want(slices.Equal(messageIDs(r.Messages), []string{"m1"}), "claim after the waiting connection ended: %+v, want m1", r)
	})
}

// describedPanes is queuePanes that says how many messages each pane has
// queued (broker.PaneDescriber), as the hub's panes do.
type describedPanes struct{ *queuePanes }

func (p describedPanes) Describe(role string) (proto.PaneView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return proto.PaneView{Role: role, Hosted: true, Queued: len(p.queue[role])}, true
}

// Deliver queues d as a message whose typing began: not claimable.
func (p describedPanes) Deliver(role string, d broker.PaneDelivery) {
	d.Claimable = false
	p.queuePanes.Deliver(role, d)
}

// claims is how many claims the panes were asked for.
func (p describedPanes) claims() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.midTurn)
}

// TestClaimWaitRecheck: a waiting claim looks again on a clock only while
// the role's pane has messages queued (#36): with none it runs no timer;
// a queued message that turns claimable without waking it (the typing
// gave it back unstarted) is still taken by the recheck.
func TestClaimWaitRecheck(t *testing.T) {
	t.Parallel()
	q := describedPanes{newQueuePanes()}
	h := newHarness(t, func(_ *broker.Config, d *broker.Deps) { d.Panes = q }, func(c *broker.Config, _ *broker.Deps) { c.ClaimLease = time.Minute })
	ch := waitingClaim(t, h.as("builder", false), "w1", time.Minute)
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(q.claims() >= 1, "the waiting claim's first look, %d claims", q.claims())
	})
	before := q.claims()
	time.Sleep(2500 * time.Millisecond) // two and a half rechecks
	if n := q.claims() - before; n != 0 {
		t.Fatalf("%d rechecks while the pane had nothing queued", n)
	}
	// Sent while its typing begins (not claimable: the claim looks, and
	// the pane now holds it), then given back unstarted without a wake-up:
	// only the recheck can see it.
	send(t, h.as("architect", false), proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "given back", MessageID: "m1"})
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(q.claims() > before, "the message wakes the waiting claim, %d claims", q.claims())
	})
	q.mu.Lock()
	q.queue["builder"][0].Claimable = true
	q.mu.Unlock()
	if r := answerOf(t, ch); !slices.Equal(messageIDs(r.Messages), []string{"m1"}) {
		t.Fatalf("answer %+v, want m1", r)
	}
}
