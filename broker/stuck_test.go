package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// endingPanes is a pane set whose every delivery ends with end (a stuck or
// failed report).
type endingPanes struct {
	fakePanes
	end func(d broker.PaneDelivery)
}

func (p *endingPanes) Deliver(_ string, d broker.PaneDelivery) { p.end(d) }

var errStuckTest = errors.New("message stuck")

// TestPaneDeliveryEndsToldToSender: a message a pane could not get
// submitted is recorded stuck (ack status and event, with the reason) and
// stays pending (so a restart types it again); one the pane could not take
// at all (a background slot that ended before typing it) is recorded
// failed, pane_failed. Either way its sender is told by a system notice
// naming the message. Before, a pane delivery could not say stuck (the row
// stayed brokered with no trace), and a failed one was recorded with no
// word to the sender.
func TestPaneDeliveryEndsToldToSender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		end       func(d broker.PaneDelivery)
		status    status.Status
		ackStatus status.Stage
		code      status.Code
		event     status.Event
		notice    string // the notice's id
		says      string // in the notice
	}{
		{
			name:   "stuck",
			end:    func(d broker.PaneDelivery) { d.Stuck(fmt.Errorf("%w: the text never appeared", errStuckTest)) },
			status: status.Brokered, ackStatus: status.Stuck, event: status.EventStuck,
			notice: msgid.Stuck("end-1"), says: "is stuck: message stuck: the text never appeared",
		},
		{
			name: "failed",
			end: func(d broker.PaneDelivery) {
				d.Failed(errors.New("builder-bg-1 ended (killed) before the message was typed"))
			},
			status: status.Failed, code: status.CodePaneFailed, event: status.EventFailed,
			notice: msgid.Failed("end-1"), says: "failed: builder-bg-1 ended (killed) before the message was typed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(_ *broker.Config, d *broker.Deps) {
				d.Panes = &endingPanes{fakePanes: fakePanes{hosted: map[string]bool{"builder": true}}, end: tc.end}
			})
			arch := h.as("architect", true)
			if a := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1): run the tests", MessageID: "end-1"}); !a.OK {
				t.Fatalf("send: %+v", a)
			}
			poll.For(t, 10*time.Second, func() error {
				r, err := h.ledger.Get(context.Background(), "end-1")
				if err != nil {
					return err
				}
				if r.Status != tc.status || r.AckStatus != tc.ackStatus || r.ErrorCode != tc.code {
					return fmt.Errorf("row end-1 is %s/%s/%s; want %s/%s/%s", r.Status, r.AckStatus, r.ErrorCode, tc.status, tc.ackStatus, tc.code)
				}
				return nil
			})
			m := decode[proto.Message](t, nextOf(t, arch, proto.TypeMessage))
			if m.MessageID != tc.notice || m.From != "system" || !strings.Contains(m.Content, "end-1") || !strings.Contains(m.Content, tc.says) {
				t.Fatalf("architect got %+v; want the notice %s from system saying %q", m, tc.notice, tc.says)
			}
			evs, err := h.ledger.Events(context.Background(), "end-1")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range evs {
				found = found || e.Event == tc.event
			}
			if !found {
				t.Fatalf("no %s event for end-1: %+v", tc.event, evs)
			}
		})
	}
}
