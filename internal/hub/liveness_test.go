package hub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
	"hm/internal/hub"
)

// TestWaitingForHumanTelegram: a pane whose screen shows a dialog for a
// person is waiting_for_human in the hub's status, and once it waited
// longer than the notice time the human gets one Telegram line, not
// repeated for the rest of that spell; the spell ends when the dialog goes.
// The dialog stands 6 s: under make test the hub came up 2 s after the
// program did, and a 2.5 s dialog went before the spell was 300 ms old.
func TestWaitingForHumanTelegram(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer("123:secret")
	defer fake.Close()
	root := t.TempDir()
	settings := fmt.Sprintf(`{"profiles":{"dlg":{"ready":[">"],"blocked":["Do you want to proceed?"]}},"panes":[
	 {"role":"architect","transport":"ws"},
	 {"role":"builder","command":%q,"profile":"dlg"},
	 {"role":"oracle","transport":"ws"}]}`, agentCmd(root, "builder", "FAKEAGENT_DIALOG_MS=6000"))
	th := startHubAt(t, root, hubConfig{settings: settings, opts: func(o *hub.Options) {
		telegramEnv(fake)(o)
		o.WaitingNotice = 300 * time.Millisecond
	}})
	state := func() hub.PaneStatus {
		for _, p := range th.h.Snapshot(context.Background()).Panes {
			if p.Role == "builder" {
				return p
			}
		}
		return hub.PaneStatus{}
	}
	poll.For(t, 30*time.Second, func() error {
		p := state()
		return poll.Want(p.State == "waiting_for_human" && strings.HasPrefix(p.Readiness, "blocked: Do you want to proceed?"), "builder waits for a person, have %+v", p)
	})
	sent, err := fake.WaitSent(ctxT(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := sent[0]; s.ChatID != "42" || !strings.HasPrefix(s.Text, "hm: builder (BUILDER) has waited for you for ") ||
		!strings.Contains(s.Text, "blocked: Do you want to proceed?") || !strings.HasSuffix(s.Text, "hm attach builder") {
		t.Fatalf("sent %+v", s)
	}
	// The dialog goes: the spell ends, told once.
	poll.For(t, 30*time.Second, func() error {
		p := state()
		return poll.Want(p.State != "waiting_for_human" && p.State != "starting", "dialog gone, have %+v", p)
	})
	if n := len(fake.Sent()); n != 1 {
		t.Fatalf("%d Telegram lines for one waiting spell: %+v", n, fake.Sent())
	}
}
