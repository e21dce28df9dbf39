package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// scriptedPanes is a pane set whose Deliver plays script: the stages a
// real pane would report for the message.
type scriptedPanes struct {
	fakePanes
	script func(d broker.PaneDelivery)
}

func (p *scriptedPanes) Deliver(_ string, d broker.PaneDelivery) { p.script(d) }

// TestPaneEventsRecorded: what a pane reports besides the stages is in the
// ledger, as events with their details, between brokered and submitted:
//   - a typing the program's exit cut short is another attempt (event
//     attempt with the reason, attempt count up); before, the ledger had no
//     trace of it, only a second typed event or none at all;
//   - an urgent message for which the pane interrupted its busy program
//     has event interrupted with the pane; a normal one has none.
func TestPaneEventsRecorded(t *testing.T) {
	t.Parallel()
	cut := errors.New("pane program exited while the message was being typed, before Enter: typed again, whole, after the restart")
	for _, tc := range []struct {
		name, content string
		script        func(d broker.PaneDelivery)
		want          string
		attempts      int
		detail        map[status.Event]string // event → a text its detail must hold
	}{
		{name: "retyping", content: "(ARCH #1): run the tests",
			script: func(d broker.PaneDelivery) { d.Typed(); d.Retyping(cut); d.Typed(); d.Submitted(true) },
			want:   "brokered typed attempt typed submitted", attempts: 1,
			detail: map[status.Event]string{status.EventAttempt: "exited while the message was being typed"}},
		{name: "interrupted", content: "(ARCH #1): [URGENT] stop the deploy",
			script: func(d broker.PaneDelivery) { d.Interrupted(); d.Typed(); d.Submitted(true) },
			want:   "brokered interrupted typed submitted",
			detail: map[status.Event]string{status.EventInterrupted: ""}},
		{name: "plain", content: "(ARCH #1): when you have a minute",
			script: func(d broker.PaneDelivery) { d.Typed(); d.Submitted(true) },
			want:   "brokered typed submitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(_ *broker.Config, d *broker.Deps) {
				d.Panes = &scriptedPanes{fakePanes: fakePanes{hosted: map[string]bool{"builder": true}}, script: tc.script}
			})
			arch := h.as("architect", true)
			id := "pe-" + tc.name
			if a := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: tc.content, MessageID: id}); !a.OK {
				t.Fatalf("send: %+v", a)
			}
			var r struct {
				status  status.Status
				ack     status.Stage
				attempt int
			}
			poll.For(t, 10*time.Second, func() error {
				m, err := h.ledger.Get(context.Background(), id)
				if err != nil {
					return err
				}
				r.status, r.ack, r.attempt = m.Status, m.AckStatus, int(m.Attempt)
				return poll.Want(m.Status == status.Routed && m.AckStatus == status.Submitted, "row is %s/%s; want routed/submitted", m.Status, m.AckStatus)
			})
			if r.attempt != tc.attempts {
				t.Errorf("attempt = %d, want %d", r.attempt, tc.attempts)
			}
			evs, err := h.ledger.Events(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range evs {
				names = append(names, string(e.Event))
				text, check := tc.detail[e.Event]
				if !check {
					continue
				}
				var d struct{ Pane, Error string }
				if err := json.Unmarshal(e.Detail, &d); err != nil || d.Pane != "builder" || !strings.Contains(d.Error, text) {
					t.Errorf("%s event detail %s (%v); want the pane and %q", e.Event, e.Detail, err, text)
				}
			}
			if got := strings.Join(names, " "); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}
