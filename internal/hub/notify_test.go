package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/hub"
	"hm/internal/notify/notifytest"
)

// TestNotificationsWithoutTelegram: with no Telegram, a pane waiting for
// a person and a message to user reach the person through settings.json
// "notifications": {"command"} (a script that appends its arguments to a
// file), each once, and the hub's status lists them for the cockpit
// (issue #34: waiting_for_human was a word in hm status, a message to
// user an INFO log line).
func TestNotificationsWithoutTelegram(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	command, calls := notifytest.Command(t, t.TempDir())
	settings := fmt.Sprintf(`{"notifications":{"command":%q},"profiles":{"dlg":{"ready":[">"],"blocked":["Do you want to proceed?"]}},"panes":[
	 {"role":"architect","transport":"ws"},
	 {"role":"builder","command":%q,"profile":"dlg"},
	 {"role":"oracle","transport":"ws"}]}`, command, agentCmd(root, "builder", "FAKEAGENT_DIALOG_MS=2500"))
	th := startHubAt(t, root, hubConfig{settings: settings, opts: func(o *hub.Options) {
		o.WaitingNotice = 300 * time.Millisecond
	}})
	waiting := "hm: builder is waiting for you\twaited for you for "
	poll.For(t, 20*time.Second, func() error {
		got := calls()
		return poll.Want(slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, waiting) && strings.Contains(s, "blocked: Do you want to proceed?")
		}), "the notifier got %q, want a line starting %q", got, waiting)
	})
	// The dialog goes; the spell was told once.
	poll.For(t, 10*time.Second, func() error {
		for _, p := range th.h.Snapshot(context.Background()).Panes {
			if p.Role == "builder" {
				return poll.Want(p.State != "waiting_for_human" && p.State != "starting", "dialog gone, have %+v", p)
			}
		}
		return fmt.Errorf("no builder pane")
	})

	arch := th.as("architect", false)
	send(t, arch, proto.Frame{Target: "user", Content: "the build is green"})
	msg := "hm: ARCH #1 (architect) wrote to you\tthe build is green"
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(slices.Contains(calls(), msg), "the notifier got %q, want %q", calls(), msg)
	})
	got := calls()
	if n := len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !strings.HasPrefix(s, waiting) })); n != 1 || len(got) != 2 {
		t.Fatalf("the notifier was called %d times (%d for the waiting spell): %q", len(got), n, got)
	}
	var kinds []string
	for _, ev := range th.h.Snapshot(context.Background()).Notifications {
		kinds = append(kinds, string(ev.Kind))
	}
	if !slices.Equal(kinds, []string{"waiting_for_human", "message"}) {
		t.Fatalf("status lists notifications %v", kinds)
	}
}
