package hub_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/broker/proto"
	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
	"hm/internal/hub"
)

func telegramEnv(fake *telegramtest.Server) func(*hub.Options) {
	return func(o *hub.Options) {
		env := map[string]string{"TELEGRAM_BOT_TOKEN": fake.Token, "TELEGRAM_CHAT_ID": "42", "TELEGRAM_API_URL": fake.URL}
		o.Getenv = func(k string) string { return env[k] }
		o.TelegramPoll = time.Second
	}
}

// startTelegramHub starts a hub at root with settings (fakeTeam(root) when
// empty) whose relay talks to a fake Bot API, and waits until it polls.
func startTelegramHub(t *testing.T, root, settings string) (*testHub, *telegramtest.Server) {
	t.Helper()
	fake := telegramtest.NewServer("123:secret")
	t.Cleanup(fake.Close) // after the hub's own cleanup has stopped it
	if settings == "" {
		settings = fakeTeam(root)
	}
	th := startHubAt(t, root, hubConfig{settings: settings, opts: telegramEnv(fake)})
	poll.For(t, 30*time.Second, func() error {
		st := th.h.Snapshot(context.Background()).Telegram.State
		return poll.Want(st == "polling", "relay polling, have %v", st)
	})
	return th, fake
}

func TestTelegramThroughTheHub(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th, fake := startTelegramHub(t, root, "")
	archLog := filepath.Join(root, "architect.jsonl")
	id := fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Dana", Text: "ship it"})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, archLog), "[Telegram from Dana]: ship it"), "inbound typed into the architect pane")
	})
	in := row(t, th, "telegram-in-"+itoa64(id))
	if in.Channel != "telegram" || in.Direction != "inbound" || in.SenderRole != "user" || in.TargetRole != "architect" {
		t.Fatalf("inbound row = %+v", in)
	}
	// A foreign chat is recorded and never typed.
	foreign := fake.Enqueue(telegramtest.Message{ChatID: 666, FromName: "Mallory", Text: "rm -rf please"})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(row(t, th, "telegram-refused-"+itoa64(foreign)).ErrorCode == "chat_not_allowed", "foreign update refused")
	})
	if containsPrompt(prompts(t, archLog), "rm -rf please") {
		t.Fatal("a foreign chat's text reached the pane")
	}

	arch := th.as("architect", false, th.paneToken("architect"))
	ack := send(t, arch, proto.Frame{Target: "telegram", Content: "deployed", MessageID: "tg-out-1"})
	if !ack.OK {
		t.Fatalf("telegram send: %+v", ack)
	}
	sent, err := fake.WaitSent(ctxT(t), 1)
	if err != nil || sent[0].ChatID != "42" || sent[0].Text != "deployed" {
		t.Fatalf("sent = %+v, %v", sent, err)
	}
	// user within the 5-minute window also reaches Telegram.
	send(t, arch, proto.Frame{Target: "user", Content: "also to you", MessageID: "tg-user-1"})
	if sent, err := fake.WaitSent(ctxT(t), 2); err != nil || sent[1].Text != "also to you" {
		t.Fatalf("user in window: %+v, %v", sent, err)
	}
	// A long reply arrives as ordered parts under the limit.
	long := strings.Repeat("word ", 2000)
	send(t, arch, proto.Frame{Target: "telegram", Content: long, MessageID: "tg-long"})
	sent, err = fake.WaitSent(ctxT(t), 5)
	if err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for _, s := range sent[2:] {
		if len(s.Text) >= 4096 {
			t.Fatalf("part of %d bytes", len(s.Text))
		}
		joined.WriteString(s.Text + " ")
	}
	if strings.Join(strings.Fields(joined.String()), " ") != strings.TrimSpace(long) {
		t.Fatal("parts do not reassemble the reply")
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(row(t, th, "tg-long").AckStatus == status.DeliveredVerified, "long parent delivered")
	})
	// A permanent 403 ends failed with the reason in the ledger.
	fake.Inject("sendMessage", 1, telegramtest.Forbidden())
	send(t, arch, proto.Frame{Target: "telegram", Content: "blocked?", MessageID: "tg-403"})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(row(t, th, "tg-403").Status == "failed" && row(t, th, "telegram-tg-403-part-1").Status == "failed", "403 recorded")
	})

	// Restart between updates: nothing lost, nothing repeated.
	th.stop()
	while := fake.Enqueue(telegramtest.Message{ChatID: 42, FromName: "Dana", Text: "while you were down"})
	th2 := startHubAt(t, root, hubConfig{settings: fakeTeam(root), opts: telegramEnv(fake)})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(row(t, th2, "telegram-in-"+itoa64(while)).MessageID != "", "update from downtime delivered")
	})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, archLog), "while you were down"), "typed once")
	})
	// Counted by its trailer: the restarted hub's briefing may quote it.
	n := 0
	for _, p := range prompts(t, archLog) {
		n += strings.Count(p, "[hm:telegram-in-"+itoa64(id)+"]")
	}
	if n != 1 {
		t.Fatalf("first update typed %d times across the restart", n)
	}
}

func TestTelegramOffWithoutToken(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes})
	c := th.as("architect", false)
	if ack := send(t, c, proto.Frame{Target: "telegram", Content: "hello"}); ack.OK || ack.Status != "telegram_unconfigured" {
		t.Fatalf("ack = %+v", ack)
	}
	if st := th.h.Snapshot(context.Background()).Telegram.State; st != "off" {
		t.Fatalf("state %q", st)
	}
	// The hub is otherwise unaffected.
	if ack := send(t, c, proto.Frame{Target: "builder", Content: "still here"}); !ack.OK {
		t.Fatalf("ack = %+v", ack)
	}
	_ = context.Background
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
