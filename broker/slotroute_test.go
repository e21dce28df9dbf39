package broker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// slotsRunning is a broker.Background whose slots are running as far as the
// broker's resolve is concerned, while no pane hosts them (the slot ended
// between the send's check and its dispatch).
type slotsRunning struct{}

func (slotsRunning) Handle(context.Context, string, json.RawMessage) (proto.BgResult, bool) {
	return proto.BgRefusal{Status: status.CodeSlotUnavailable}, false
}
func (slotsRunning) Running(string) bool { return true }

// heldPanes hosts its roles but never types what it is given, as a hub
// killed before the pane got to a message.
type heldPanes struct {
	mu     sync.Mutex
	hosted map[string]bool
}

func (p *heldPanes) Hosted(role string) bool             { p.mu.Lock(); defer p.mu.Unlock(); return p.hosted[role] }
func (p *heldPanes) Deliver(string, broker.PaneDelivery) {}
func (p *heldPanes) Health(string) (string, time.Time, bool) {
	return "busy", time.Now(), true
}

// TestMessageToEndedSlotFails: a message accepted for a background slot
// whose pane is gone when it is dispatched (the slot ended right after the
// send was checked; or a pending row recovered after a restart, when no
// slot runs yet) fails with no_route and its sender is told. Before the
// fix dispatch skipped the member and the row stayed brokered for ever.
func TestMessageToEndedSlotFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) *harness
	}{
		{"ended before dispatch", func(t *testing.T) *harness {
			h := newHarness(t, withPanes("architect"), func(_ *broker.Config, d *broker.Deps) { d.Background = slotsRunning{} })
			if ack := send(t, h.as("architect", false), proto.Frame{Type: "send", Target: "builder-bg-1", Content: "work", MessageID: "slot-1"}); !ack.OK {
				t.Fatalf("send: %+v", ack)
			}
			return h
		}},
		{"recovered after restart", func(t *testing.T) *harness {
			db := filepath.Join(t.TempDir(), "l.db")
			h1 := newHarnessAt(t, db, 1, func(_ *broker.Config, d *broker.Deps) {
				d.Panes = &heldPanes{hosted: map[string]bool{"builder-bg-1": true}}
			})
			if ack := send(t, h1.as("architect", false), proto.Frame{Type: "send", Target: "builder-bg-1", Content: "work", MessageID: "slot-1"}); !ack.OK {
				t.Fatalf("send: %+v", ack)
			}
			h1.close()
			h := newHarnessAt(t, db, 2, withPanes("architect"))
			if _, _, err := h.b.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			return h
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.run(t)
			poll.For(t, 15*time.Second, func() error {
				m, err := h.ledger.Get(context.Background(), "slot-1")
				if err != nil {
					return err
				}
				return poll.Want(m.Status == status.Failed && m.ErrorCode == status.CodeNoRoute, "row %s/%s, want failed/no_route", m.Status, m.ErrorCode)
			})
			poll.For(t, 15*time.Second, func() error {
				return poll.Want(h.panes.count("architect") == 1, "architect told of the failure (%d notices)", h.panes.count("architect"))
			})
		})
	}
}
