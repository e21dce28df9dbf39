package broker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
)

type fakeTelegram struct {
	mu       sync.Mutex
	lastAt   time.Time
	sentTo   []string
	sentBody []string
}

func (f *fakeTelegram) Enabled() bool     { return true }
func (f *fakeTelegram) OwnerChat() string { return "42" }
func (f *fakeTelegram) LastInbound() (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "7", f.lastAt
}
func (f *fakeTelegram) Send(_ context.Context, _, chatID, _, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sentTo = append(f.sentTo, chatID)
	f.sentBody = append(f.sentBody, body)
	return nil
}
func (f *fakeTelegram) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sentTo...)
}

func TestUserTargetTelegramWindow(t *testing.T) {
	t.Parallel()
	tg := &fakeTelegram{}
	h := newHarness(t, func(_ *broker.Config, d *broker.Deps) { d.Telegram = tg })
	arch := h.as("architect", false)

	tests := []struct {
		name     string
		lastIn   time.Duration // how long ago the human last wrote; 0 = never
		target   string
		wantChat string // "" = not sent to Telegram
	}{
		{"user, never wrote", 0, "user", ""},
		{"user, wrote 1 minute ago", time.Minute, "user", "7"},
		{"user, wrote 6 minutes ago", 6 * time.Minute, "user", ""},
		{"telegram, always to the owner chat", 6 * time.Minute, "telegram", "42"},
	}
	for i, tt := range tests {
		tg.mu.Lock()
		tg.lastAt = time.Time{}
		if tt.lastIn > 0 {
			tg.lastAt = time.Now().Add(-tt.lastIn)
		}
		tg.mu.Unlock()
		before := len(tg.sent())
		id := "w-" + string(rune('a'+i))
		if ack := send(t, arch, proto.Frame{Type: "send", Target: tt.target, Content: "status", MessageID: id}); !ack.OK {
			t.Fatalf("%s: %+v", tt.name, ack)
		}
		poll.For(t, 15*time.Second, func() error {
			m, err := h.ledger.Get(context.Background(), id)
			return poll.Want(err == nil && m.Status == "routed", "%s settled", tt.name)
		})
		got := tg.sent()
		if tt.wantChat == "" && len(got) != before {
			t.Errorf("%s: sent to Telegram %v", tt.name, got[before:])
		}
		if tt.wantChat != "" && (len(got) != before+1 || got[before] != tt.wantChat) {
			t.Errorf("%s: sent %v, want chat %s", tt.name, got[before:], tt.wantChat)
		}
	}
}
