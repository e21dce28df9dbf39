package slots

import (
	"errors"
	"testing"
	"time"

	"hm/agent"
	"hm/internal/ground/paneevents"
	"hm/internal/ground/poll"
)

// TestDeliveryRacingSlotEndIsFailed: a message dispatched to a slot's pane
// while the slot is ending (the pane was looked up before the slot was
// removed, and reaches it after the slot failed what was queued) is failed
// too, its sender told, never left queued in a pane that will never type
// it. Before the fix it stayed pending in the stopped pane.
func TestDeliveryRacingSlotEndIsFailed(t *testing.T) {
	s, host := newSet(t, 1, "sleep 30", time.Minute)
	failed := make(chan error, 1)
	host.onRemove = func(role string, p *agent.Pane) {
		// The dispatch that found the pane a moment ago enqueues now.
		p.Enqueue(agent.Delivery{MessageID: "late-1", Content: "late work", Callbacks: paneevents.Callbacks{Failed: func(err error) { failed <- err }}})
	}
	if r, ok := handle(t, s, "spawn", ""); !ok {
		t.Fatalf("spawn = %v", r)
	}
	if r, ok := handle(t, s, "kill", `{"target":"1"}`); !ok {
		t.Fatalf("kill = %v", r)
	}
	waitFailed(t, failed)
}

// TestClaimGivenBackAfterSlotEndIsFailed: a message a CLI hook claimed from
// a slot's pane and gives back (no claim-ack) after the slot ended is
// failed, never put back into a pane that will never type it.
func TestClaimGivenBackAfterSlotEndIsFailed(t *testing.T) {
	s, host := newSet(t, 1, "sleep 30", time.Minute)
	if r, ok := handle(t, s, "spawn", ""); !ok {
		t.Fatalf("spawn = %v", r)
	}
	p, ok := s.Lookup("1")
	if !ok {
		t.Fatal("no pane for slot 1")
	}
	failed := make(chan error, 1)
	p.Enqueue(agent.Delivery{MessageID: "claimed-1", Content: "claimed work", Claimable: true, Callbacks: paneevents.Callbacks{Failed: func(err error) { failed <- err }}})
	cs := p.Claim(1, false)
	if len(cs) != 1 {
		t.Fatalf("claimed %d messages, want 1", len(cs))
	}
	if r, ok := handle(t, s, "kill", `{"target":"1"}`); !ok {
		t.Fatalf("kill = %v", r)
	}
	poll.For(t, 5*time.Second, func() error {
		return poll.Want(!host.hosted("builder-bg-1"), "slot removed")
	})
	p.Unclaim(cs...)
	waitFailed(t, failed)
}

// waitFailed waits for a delivery's Failed callback.
func waitFailed(t *testing.T, failed <-chan error) {
	t.Helper()
	var got error
	poll.For(t, 5*time.Second, func() error {
		select {
		case got = <-failed:
		default:
		}
		if got == nil {
			return errors.New("the message enqueued as the slot ended was never failed")
		}
		return nil
	})
}
