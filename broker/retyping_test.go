package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/poll"
	"hm/internal/status"
)

// retypingPanes is a pane set whose program ends once while each message
// is typed, before its Enter: the pane says so, types it again into the
// next run, and the program takes it.
type retypingPanes struct{ fakePanes }

func (p *retypingPanes) Deliver(role string, d broker.PaneDelivery) {
	d.Typed()
	d.Retyping(fmt.Errorf("pane program exited while the message was being typed, before Enter: typed again, whole, after the restart"))
	d.Typed()
	d.Submitted(true)
}

// TestPaneRetypingRecorded: a message whose typing the program's exit cut
// short is recorded as another attempt (event attempt with the reason,
// attempt count up), then submitted as usual. Before, the ledger had no
// trace of the cut typing: only a second typed event, or none at all.
func TestPaneRetypingRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *broker.Config, d *broker.Deps) {
		d.Panes = &retypingPanes{fakePanes{hosted: map[string]bool{"builder": true}}}
	})
	arch := h.as("architect", true)
	if a := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1): run the tests", MessageID: "rt-1"}); !a.OK {
		t.Fatalf("send: %+v", a)
	}
	poll.For(t, 10*time.Second, func() error {
		r, err := h.ledger.Get(context.Background(), "rt-1")
		if err != nil {
			return err
		}
		return poll.Want(r.Status == status.Routed && r.AckStatus == status.Submitted, "row rt-1 is %s/%s; want routed/submitted", r.Status, r.AckStatus)
	})
	r, err := h.ledger.Get(context.Background(), "rt-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempt != 1 {
		t.Errorf("attempt = %d, want 1 (one cut typing)", r.Attempt)
	}
	evs, err := h.ledger.Events(context.Background(), "rt-1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		names = append(names, string(e.Event))
		if e.Event != status.EventAttempt {
			continue
		}
		var d struct{ Pane, Error string }
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.Pane != "builder" || !strings.Contains(d.Error, "exited while the message was being typed") {
			t.Errorf("attempt event detail %s (%v); want the pane and the reason", e.Detail, err)
		}
	}
	if got, want := strings.Join(names, " "), "brokered typed attempt typed submitted"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}
