package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/poll"
	"hm/internal/status"
)

// interruptingPanes is a pane set whose program is busy: an urgent message
// interrupts it, then is typed and taken.
type interruptingPanes struct{ fakePanes }

func (p *interruptingPanes) Deliver(role string, d broker.PaneDelivery) {
	if d.Urgent {
		d.Interrupted()
	}
	d.Typed()
	d.Submitted(true)
}

// TestPaneInterruptRecorded: an urgent message for which the pane
// interrupted its busy program has event interrupted (with the pane) in
// the ledger, between brokered and typed; a normal one has none.
func TestPaneInterruptRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *broker.Config, d *broker.Deps) {
		d.Panes = &interruptingPanes{fakePanes{hosted: map[string]bool{"builder": true}}}
	})
	arch := h.as("architect", true)
	for _, tc := range []struct{ id, content, want string }{
		{"int-1", "(ARCH #1): [URGENT] stop the deploy", "brokered interrupted typed submitted"},
		{"int-2", "(ARCH #2): when you have a minute", "brokered typed submitted"},
	} {
		if a := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: tc.content, MessageID: tc.id}); !a.OK {
			t.Fatalf("send %s: %+v", tc.id, a)
		}
		poll.For(t, 10*time.Second, func() error {
			r, err := h.ledger.Get(context.Background(), tc.id)
			if err != nil {
				return err
			}
			return poll.Want(r.AckStatus == status.Submitted, "row %s is %s/%s; want submitted", tc.id, r.Status, r.AckStatus)
		})
		evs, err := h.ledger.Events(context.Background(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range evs {
			names = append(names, string(e.Event))
			if e.Event == status.EventInterrupted {
				var d struct{ Pane string }
				if err := json.Unmarshal(e.Detail, &d); err != nil || d.Pane != "builder" {
					t.Errorf("interrupted event detail %s (%v); want the pane", e.Detail, err)
				}
			}
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s: events %q, want %q", tc.id, got, tc.want)
		}
	}
}
