package broker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/notify"
	"hm/internal/notify/notifytest"
)

// TestNotificationPaths: each broker event that deserves telling the
// person reaches a desktop notifier command once (issue #34: a message to
// user ended as an INFO log line in the hub's terminal): a message to
// user, one asking for their answer, a message stuck at a pane, an answer
// an agent owes them past its reminder; a message between agents does
// not. The notifier is a script that appends its arguments to a file.
func TestNotificationPaths(t *testing.T) {
	t.Parallel()
	stuckPanes := func(_ *broker.Config, d *broker.Deps) {
		d.Panes = &endingPanes{fakePanes: fakePanes{hosted: map[string]bool{"builder": true}},
			end: func(d broker.PaneDelivery) { d.Stuck(fmt.Errorf("%w: the text never appeared", errStuckTest)) }}
	}
	soonReminded := func(c *broker.Config, _ *broker.Deps) { c.ReminderAfter = time.Millisecond }
	cases := []struct {
		name string
		opt  harnessOpt
		from string
		f    proto.Frame
		want string // the one "title\tbody" line; "" for none
	}{
		{"message to user", nil, "architect", proto.Frame{Target: "user", Content: "tests pass"},
			"hm: ARCH #1 (architect) wrote to you\ttests pass"},
		{"asks for an answer", nil, "architect", proto.Frame{Target: "user", Content: "[ACK REQUIRED] may I deploy?"},
			"hm: ARCH #1 (architect) asks for your answer\t[ACK REQUIRED] may I deploy?"},
		{"stuck", stuckPanes, "architect", proto.Frame{Target: "builder", Content: "run the tests"},
			"hm: a message is stuck at builder\tARCH #1 → builder: message stuck: the text never appeared. hm status lists it; hm attach builder shows the pane."},
		{"owed an answer", soonReminded, "user", proto.Frame{Target: "builder", Content: "[ACK REQUIRED] review the parser"},
			"hm: builder owes you an answer\tbuilder has not answered your USER #1 for 0s (hm status lists open obligations)."},
		{"between agents", nil, "architect", proto.Frame{Target: "oracle", Content: "hello"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			command, calls := notifytest.Command(t, t.TempDir())
			n := notify.New(notify.Config{Sinks: []notify.Sink{notify.DesktopCommand(command)}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); n.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			opts := []harnessOpt{func(_ *broker.Config, d *broker.Deps) { d.Notices = n }}
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			h := newHarness(t, opts...)
			h.as("builder", true) // a listener, so a message to builder is routed
			sender := h.as(tc.from, false)
			tc.f.Type = "send"
			if ack := send(t, sender, tc.f); !ack.OK {
				t.Fatalf("send: %+v", ack)
			}
			if tc.name == "owed an answer" {
				time.Sleep(5 * time.Millisecond) // past ReminderAfter
				h.b.RemindOnce(context.Background())
				h.b.RemindOnce(context.Background()) // one reminder, one notification
			}
			if tc.want == "" {
				// A message to user after it: told alone.
				send(t, h.as("oracle", false), proto.Frame{Type: "send", Target: "user", Content: "sentinel"})
				tc.want = "hm: ORACLE #1 (oracle) wrote to you\tsentinel"
			}
			poll.For(t, 15*time.Second, func() error {
				got := calls()
				return poll.Want(slices.Contains(got, tc.want), "the notifier was called with %q, want %q", got, tc.want)
			})
			time.Sleep(50 * time.Millisecond) // a second call would show now
			if got := calls(); len(got) != 1 {
				t.Fatalf("the notifier was called %d times: %q", len(got), got)
			}
			for _, ev := range n.Recent() {
				if !strings.HasPrefix(ev.Title, "hm: ") || ev.Seq != 1 {
					t.Errorf("recent event %+v", ev)
				}
			}
		})
	}
}
