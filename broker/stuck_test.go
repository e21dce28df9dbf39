package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/msgid"
	"hm/internal/poll"
	"hm/internal/status"
)

// stuckPanes is a pane set whose program never takes the text: every
// delivery ends stuck.
type stuckPanes struct{ fakePanes }

func (p *stuckPanes) Deliver(role string, d broker.PaneDelivery) {
	d.Stuck(fmt.Errorf("%w: the text never appeared on the screen in 3 typings", errStuckTest))
}

var errStuckTest = errors.New("message stuck")

// TestStuckPaneMessage: a message a pane could not get submitted is
// recorded stuck (ack status and event, with the reason), stays pending
// (so a restart types it again), and its sender is told by a system notice.
// Before, a pane delivery had no way to say so: the row stayed brokered
// with no trace and the sender heard nothing.
func TestStuckPaneMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *broker.Config, d *broker.Deps) {
		d.Panes = &stuckPanes{fakePanes{hosted: map[string]bool{"builder": true}}}
	})
	arch := h.as("architect", true)
	if a := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1): run the tests", MessageID: "st-1"}); !a.OK {
		t.Fatalf("send: %+v", a)
	}
	poll.For(t, 10*time.Second, func() error {
		r, err := h.ledger.Get(context.Background(), "st-1")
		if err != nil {
			return err
		}
		if r.AckStatus != status.Stuck || r.Status != status.Brokered {
			return fmt.Errorf("row st-1 is %s/%s; want brokered/stuck", r.Status, r.AckStatus)
		}
		return nil
	})
	m := decode[proto.Message](t, nextOf(t, arch, proto.TypeMessage))
	if m.MessageID != msgid.Stuck("st-1") || m.From != "system" {
		t.Fatalf("architect got %+v; want the stuck notice %s from system", m, msgid.Stuck("st-1"))
	}
	evs, err := h.ledger.Events(context.Background(), "st-1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		found = found || e.Event == status.EventStuck
	}
	if !found {
		t.Fatalf("no %s event for st-1: %+v", status.EventStuck, evs)
	}
}
