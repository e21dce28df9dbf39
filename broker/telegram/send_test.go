package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
)

// newSendRelay creates a relay for Send tests (Run is not needed to send).
func newSendRelay(t *testing.T, fake *telegramtest.Server, store *memStore, edit func(*Config)) *Relay {
	t.Helper()
	cfg := testConfig(t, fake)
	if edit != nil {
		edit(&cfg)
	}
	r, err := New(cfg, store, store.Deliver)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// TestSendLongReply: a 10,000-character reply arrives as ordered parts, each
// under Telegram's limit, recorded and finished one by one, without the role
// header, and together equal to the body.
func TestSendLongReply(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	r := newSendRelay(t, fake, store, nil)

	var b strings.Builder
	for i := 0; b.Len() < 10000; i++ {
		b.WriteString("Paragraph " + strconv.Itoa(i) + ": ")
		b.WriteString(strings.Repeat("lorem ipsum dolor sit amet ", 9))
		b.WriteString("\n\n")
	}
	body := strings.TrimSpace(b.String())[:10000]
	if err := r.Send(context.Background(), "hm-1-abc", "", "architect", "(ARCH #7): "+body); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) < 3 {
		t.Fatalf("sent %d parts, want at least 3", len(sent))
	}
	var joined strings.Builder
	for i, s := range sent {
		if n := UTF16Len(s.Text); n > MaxPartLen || n >= 4096 {
			t.Errorf("part %d is %d UTF-16 units", i, n)
		}
		if s.ChatID != "42" {
			t.Errorf("part %d went to chat %q, want the owner chat 42", i, s.ChatID)
		}
		if i < len(sent)-1 && !strings.HasSuffix(s.Text, ".") && !strings.HasSuffix(s.Text, "amet") {
			t.Errorf("part %d does not end at a paragraph: ...%q", i, s.Text[len(s.Text)-20:])
		}
		joined.WriteString(s.Text)
	}
	if strings.Contains(sent[0].Text, "(ARCH #7)") {
		t.Error("role header was sent")
	}
	if stripSpace(joined.String()) != stripSpace(body) {
		t.Error("parts do not add up to the body")
	}
	parts := store.recordedParts()
	if len(parts) != len(sent) {
		t.Fatalf("recorded %d parts, sent %d", len(parts), len(sent))
	}
	for i, p := range parts {
		wantID := "telegram-hm-1-abc-part-" + strconv.Itoa(i+1)
		if p.ID != wantID || p.ParentID != "hm-1-abc" || p.Index != i+1 || p.Total != len(sent) ||
			p.ChatID != "42" || p.SenderRole != "architect" || p.Text != sent[i].Text {
			t.Errorf("part %d = %+v", i, p)
		}
		if f, ok := store.finishOf(p.ID); !ok || !f.OK {
			t.Errorf("part %s finish = %+v, %v; want delivered", p.ID, f, ok)
		}
	}
	if st := r.Status(); st.Outbound != int64(len(sent)) || st.OutboundFailed != 0 {
		t.Errorf("status counters = %+v", st)
	}
}

// TestSendRetries covers the retry policy per failure kind.
func TestSendRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      telegramtest.Fault
		n          int
		cfg        func(*Config)
		delivered  bool
		minElapsed time.Duration
		reason     string // substring of the failure reason
		calls      int    // sendMessage requests expected
	}{
		{name: "429 waits retry_after", fault: telegramtest.RateLimited(1), n: 1, delivered: true, minElapsed: 900 * time.Millisecond, calls: 2},
		{name: "500 retried", fault: telegramtest.ServerError(), n: 2, delivered: true, calls: 3},
		{name: "502 retried", fault: telegramtest.BadGateway(), n: 1, delivered: true, calls: 2},
		{name: "malformed answer retried", fault: telegramtest.Malformed(), n: 1, delivered: true, calls: 2},
		{name: "slow answer times out and is retried", fault: telegramtest.Slow(time.Minute), n: 1, delivered: true, calls: 2,
			cfg: func(c *Config) { c.RequestTimeout = 200 * time.Millisecond }},
		{name: "403 is permanent", fault: telegramtest.Forbidden(), n: 1, reason: "bot was blocked by the user", calls: 1},
		{name: "400 is permanent", fault: telegramtest.Fault{Status: 400, Description: "Bad Request: chat not found"}, n: 1, reason: "chat not found", calls: 1},
		{name: "401 is permanent", fault: telegramtest.Unauthorized(), n: 1, reason: "401", calls: 1},
		{name: "500 bounded by MaxRetries", fault: telegramtest.ServerError(), n: 100, reason: "gave up after 3 attempts", calls: 3,
			cfg: func(c *Config) { c.MaxRetries = 2 }},
		{name: "429 longer than MaxRetryAfter fails", fault: telegramtest.RateLimited(3600), n: 1, reason: "429", calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			store := newMemStore()
			r := newSendRelay(t, fake, store, tt.cfg)
			fake.Inject("sendMessage", tt.n, tt.fault)
			start := time.Now()
			err := r.Send(context.Background(), "m1", "42", "builder", "(BUILDER #3): status report")
			elapsed := time.Since(start)
			f, ok := store.finishOf("telegram-m1-part-1")
			if !ok {
				t.Fatal("part never finished")
			}
			if tt.delivered {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if !f.OK {
					t.Fatalf("finish = %+v, want delivered", f)
				}
				sent := fake.Sent()
				if len(sent) != 1 || sent[0].Text != "status report" {
					t.Fatalf("sent = %+v", sent)
				}
			} else {
				if !errors.Is(err, ErrDeliveryFailed) {
					t.Fatalf("Send = %v, want ErrDeliveryFailed", err)
				}
				if f.OK || !strings.Contains(f.Reason, tt.reason) {
					t.Fatalf("finish = %+v, want failed with %q", f, tt.reason)
				}
				if strings.Contains(f.Reason, "test-secret") {
					t.Fatalf("reason leaks the token: %q", f.Reason)
				}
				if st := r.Status(); st.OutboundFailed != 1 || !strings.Contains(st.LastSendError, tt.reason) {
					t.Fatalf("status = %+v", st)
				}
			}
			if got := fake.Calls("sendMessage"); got != tt.calls {
				t.Fatalf("sendMessage calls = %d, want %d", got, tt.calls)
			}
			if elapsed < tt.minElapsed {
				t.Fatalf("Send took %v, want at least %v", elapsed, tt.minElapsed)
			}
		})
	}
}

// TestSendStopsAtFailedPart: parts after a failed one are not sent.
func TestSendStopsAtFailedPart(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	r := newSendRelay(t, fake, store, nil)
	body := strings.Repeat("a", 3000) + "\n\n" + strings.Repeat("b", 3000) + "\n\n" + strings.Repeat("c", 3000)
	// The first part goes through, the second is refused.
	fake.Inject("sendMessage", 1, telegramtest.Fault{})
	fake.Inject("sendMessage", 1, telegramtest.Forbidden())
	err := r.Send(context.Background(), "m2", "", "architect", body)
	if !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), "part 2/3") {
		t.Fatalf("Send = %v", err)
	}
	if sent := fake.Sent(); len(sent) != 1 || !strings.HasPrefix(sent[0].Text, "aaa") {
		t.Fatalf("sent = %d parts", len(sent))
	}
	if parts := store.recordedParts(); len(parts) != 2 {
		t.Fatalf("recorded %d parts, want 2", len(parts))
	}
	if f, _ := store.finishOf("telegram-m2-part-1"); !f.OK {
		t.Fatal("part 1 not delivered")
	}
	if f, _ := store.finishOf("telegram-m2-part-2"); f.OK || f.Reason == "" {
		t.Fatalf("part 2 finish = %+v", f)
	}
}

func TestSendEdgeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       func(*Config)
		store     func(*memStore)
		chat      string
		body      string
		wantErr   error
		wantSent  []telegramtest.Sent // ChatID and Text compared
		wantParts int
	}{
		{name: "explicit chat", chat: "43", body: "hi", wantSent: []telegramtest.Sent{{ChatID: "43", Text: "hi"}}, wantParts: 1},
		{name: "channel name", chat: "@teamchan", body: "hi", wantSent: []telegramtest.Sent{{ChatID: "@teamchan", Text: "hi"}}, wantParts: 1},
		{name: "header with agent prefix stripped", body: "[AGENT MSG - reply via hm-send] (ORACLE #2): [FYI] done",
			wantSent: []telegramtest.Sent{{ChatID: "42", Text: "[FYI] done"}}, wantParts: 1},
		{name: "no header kept verbatim", body: "plain (ARCH #1): text", wantSent: []telegramtest.Sent{{ChatID: "42", Text: "plain (ARCH #1): text"}}, wantParts: 1},
		{name: "invalid UTF-8 and NUL cleaned", body: "a\xffb\x00c", wantSent: []telegramtest.Sent{{ChatID: "42", Text: "a\uFFFDbc"}}, wantParts: 1},
		{name: "empty body", body: "(ARCH #4):   \n ", wantErr: ErrEmptyBody},
		{name: "no chat configured", cfg: func(c *Config) { c.ChatID, c.Allowlist = "", nil }, body: "x", wantErr: ErrUnconfigured},
		{name: "ledger unavailable: nothing sent", store: func(m *memStore) { m.failRecordPart = 1 }, body: "x", wantErr: errJournal},
		{name: "already delivered part skipped", store: func(m *memStore) { m.partDone["telegram-m-part-1"] = true }, body: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			store := newMemStore()
			if tt.store != nil {
				tt.store(store)
			}
			r := newSendRelay(t, fake, store, tt.cfg)
			err := r.Send(context.Background(), "m", tt.chat, "architect", tt.body)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Send = %v, want %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Send: %v", err)
			}
			sent := fake.Sent()
			if len(sent) != len(tt.wantSent) {
				t.Fatalf("sent %+v, want %+v", sent, tt.wantSent)
			}
			for i := range sent {
				if sent[i].ChatID != tt.wantSent[i].ChatID || sent[i].Text != tt.wantSent[i].Text {
					t.Fatalf("sent[%d] = %q to %q, want %q to %q", i, sent[i].Text, sent[i].ChatID, tt.wantSent[i].Text, tt.wantSent[i].ChatID)
				}
			}
			if got := len(store.recordedParts()); got != tt.wantParts {
				t.Fatalf("recorded %d parts, want %d", got, tt.wantParts)
			}
		})
	}
}

// TestSendCancel: cancelling the caller's ctx ends a Send that waits for
// retry_after, and the part is finished as failed anyway.
func TestSendCancel(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	r := newSendRelay(t, fake, store, nil)
	fake.Inject("sendMessage", 1, telegramtest.RateLimited(60))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Send(ctx, "m3", "", "architect", "hello") }()
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(fake.Calls("sendMessage") == 1, "first attempt, have %v", fake.Calls("sendMessage"))
	})
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Send = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send did not return after cancel")
	}
	if f, ok := store.finishOf("telegram-m3-part-1"); !ok || f.OK || !strings.Contains(f.Reason, "canceled") {
		t.Fatalf("finish = %+v %v", f, ok)
	}
}

// TestConcurrentSendsDoNotInterleave: parts of two concurrent multi-part
// sends arrive grouped per message.
func TestConcurrentSendsDoNotInterleave(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	r := newSendRelay(t, fake, store, nil)
	mk := func(c string) string {
		return strings.Repeat(c, 3900) + "\n\n" + strings.Repeat(c, 3900) + "\n\n" + strings.Repeat(c, 3900)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, c := range []string{"x", "y"} {
		wg.Go(func() { errs <- r.Send(context.Background(), "m-"+c, "", "architect", mk(c)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sent := fake.Sent()
	if len(sent) != 6 {
		t.Fatalf("sent %d parts, want 6", len(sent))
	}
	for i := 1; i < 3; i++ {
		if sent[i].Text[0] != sent[0].Text[0] || sent[i+3].Text[0] != sent[3].Text[0] {
			t.Fatal("parts of the two messages interleaved")
		}
	}
}

// TestUserWindowAfterInbound: an inbound message opens the reply window on
// its chat, and a reply to it goes there.
func TestUserWindowAfterInbound(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	store := newMemStore()
	ru := startRelay(t, testConfig(t, fake), store)
	if chat, at := ru.relay.LastInbound(); chat != "" || !at.IsZero() {
		t.Fatalf("LastInbound before any message = %q %v", chat, at)
	}
	fake.Enqueue(telegramtest.Message{ChatID: 43, FromName: "Bob", Text: "status?"})
	poll.For(t, 10*time.Second, func() error { d, _, _ := store.snapshot(); return poll.Want(len(d) == 1, "delivery, have %v", len(d)) })
	chat, at := ru.relay.LastInbound()
	if chat != "43" || time.Since(at) > time.Minute {
		t.Fatalf("LastInbound = %q %v", chat, at)
	}
	if err := ru.relay.Send(context.Background(), "reply-1", chat, "architect", "(ARCH #9): all green"); err != nil {
		t.Fatal(err)
	}
	if sent := fake.Sent(); len(sent) != 1 || sent[0].ChatID != "43" || sent[0].Text != "all green" {
		t.Fatalf("sent = %+v", sent)
	}
}
