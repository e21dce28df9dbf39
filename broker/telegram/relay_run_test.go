package telegram

// Tests of the relay's running: poll errors and backoff, a rejected token,
// stopping and running twice, the off relay, New's validation, the owner's
// chat and the poll timeout.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
)

// TestPollErrorsRecover: 5xx, malformed answers and slow answers on
// getUpdates are retried with backoff and nothing is lost.
func TestPollErrorsRecover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault telegramtest.Fault
		n     int
		cfg   func(*Config)
	}{
		{"500", telegramtest.ServerError(), 3, nil},
		{"502", telegramtest.BadGateway(), 2, nil},
		{"malformed", telegramtest.Malformed(), 2, nil},
		{"429", telegramtest.RateLimited(1), 1, nil},
		{"409 conflict", telegramtest.Fault{Status: 409}, 2, nil},
		{"slower than the request timeout", telegramtest.Slow(time.Minute), 1, func(c *Config) {
			c.RequestTimeout = 300 * time.Millisecond
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			store := newMemStore()
			fake.Inject("getUpdates", tt.n, tt.fault)
			id := fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "survives"})
			cfg := testConfig(t, fake)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			ru := startRelay(t, cfg, store)
			poll.For(t, 15*time.Second, func() error { d, _, _ := store.snapshot(); return poll.Want(len(d) == 1, "delivery, have %v", len(d)) })
			delivered, _, _ := store.snapshot()
			if delivered[0].In.UpdateID != id {
				t.Fatalf("delivered %d, want %d", delivered[0].In.UpdateID, id)
			}
			if calls := fake.Calls("getUpdates"); calls < tt.n+1 {
				t.Fatalf("getUpdates calls = %d, want > %d", calls, tt.n)
			}
			poll.For(t, 5*time.Second, func() error {
				return poll.Want(ru.relay.Status().State == StatePolling, "state polling, have %v", ru.relay.Status().State)
			})
		})
	}
}

// TestRejectedToken: a token the API rejects puts the relay in state error
// with a clear message, and it does not hammer the API.
func TestRejectedToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		token  string
		inject func(*telegramtest.Server)
	}{
		{"getMe 401 for an unknown token", "111:wrong", nil},
		{"getUpdates 401 after a good getMe", testToken, func(s *telegramtest.Server) {
			s.Inject("getUpdates", 1000, telegramtest.Unauthorized())
		}},
		{"getMe 404", testToken, func(s *telegramtest.Server) {
			s.Inject("getMe", 1000, telegramtest.Fault{Status: 404})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			if tt.inject != nil {
				tt.inject(fake)
			}
			cfg := testConfig(t, fake)
			cfg.Token = tt.token
			ru := startRelay(t, cfg, newMemStore())
			poll.For(t, 10*time.Second, func() error {
				return poll.Want(ru.relay.Status().State == StateError, "state error, have %v", ru.relay.Status().State)
			})
			// Watch the API for a while: with the default 5-minute rejected
			// backoff there must be no further attempt.
			before := fake.Calls("getMe") + fake.Calls("getUpdates")
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			after := fake.Calls("getMe") + fake.Calls("getUpdates")
			if after != before || after > 2 {
				t.Fatalf("API calls: %d before the window, %d after; want no retries", before, after)
			}
			st := ru.relay.Status()
			if st.State != StateError || !strings.Contains(st.LastError, "token rejected") {
				t.Fatalf("status = %+v", st)
			}
			if strings.Contains(st.LastError, strings.Split(tt.token, ":")[1]) {
				t.Fatalf("status leaks the token: %q", st.LastError)
			}
			if took := ru.stop(t); took > 5*time.Second {
				t.Fatalf("Run took %v to stop", took)
			}
		})
	}
}

// TestRejectedTokenRetriesSlowly: with a short RejectedBackoff the relay tries
// again, at that pace, and recovers when the token works again.
func TestRejectedTokenRetriesSlowly(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.Inject("getMe", 3, telegramtest.Unauthorized())
	cfg := testConfig(t, fake)
	cfg.RejectedBackoff = 300 * time.Millisecond
	store := newMemStore()
	fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "eventually"})
	start := time.Now()
	ru := startRelay(t, cfg, store)
	poll.For(t, 15*time.Second, func() error {
		d, _, _ := store.snapshot()
		return poll.Want(len(d) == 1, "delivery after the token works, have %v", len(d))
	})
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("recovered after %v; three rejections should take at least 900ms", el)
	}
	if got := fake.Calls("getMe"); got != 4 {
		t.Fatalf("getMe calls = %d, want 4", got)
	}
	poll.For(t, 5*time.Second, func() error {
		return poll.Want(ru.relay.Status().State == StatePolling, "state polling, have %v", ru.relay.Status().State)
	})
}

// TestRunStopsPromptly cancels Run in each phase: while long-polling, while
// backing off, and while waiting for the store.
func TestRunStopsPromptly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(*telegramtest.Server, *memStore, *Config)
		ready func(*telegramtest.Server, *Relay) bool
	}{
		{"long poll", func(s *telegramtest.Server, m *memStore, c *Config) {
			c.PollTimeout = 30 * time.Second
		}, func(s *telegramtest.Server, r *Relay) bool { return s.Calls("getUpdates") >= 1 }},
		{"backoff", func(s *telegramtest.Server, m *memStore, c *Config) {
			c.Backoff, c.MaxBackoff = time.Minute, time.Minute
			s.Inject("getUpdates", 1, telegramtest.ServerError())
		}, func(s *telegramtest.Server, r *Relay) bool { return r.Status().State == StateError }},
		{"store unavailable", func(s *telegramtest.Server, m *memStore, c *Config) {
			c.Backoff, c.MaxBackoff = time.Minute, time.Minute
			m.failKVGet = 1000
		}, func(s *telegramtest.Server, r *Relay) bool { return r.Status().State == StateError }},
		{"slow getMe", func(s *telegramtest.Server, m *memStore, c *Config) {
			s.Inject("getMe", 1, telegramtest.Slow(time.Minute))
		}, func(s *telegramtest.Server, r *Relay) bool { return s.Calls("getMe") >= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			store := newMemStore()
			cfg := testConfig(t, fake)
			tt.setup(fake, store, &cfg)
			ru := startRelay(t, cfg, store)
			poll.For(t, 10*time.Second, func() error { return poll.Want(tt.ready(fake, ru.relay), "phase reached") })
			time.Sleep(20 * time.Millisecond) // let it settle into the wait
			if took := ru.stop(t); took > 3*time.Second {
				t.Fatalf("Run took %v to return after cancel", took)
			}
			if st := ru.relay.Status(); st.State != StateOff {
				t.Fatalf("state after Run = %q, want off", st.State)
			}
		})
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	ru := startRelay(t, testConfig(t, fake), newMemStore())
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(fake.Calls("getUpdates") >= 1, "polling, have %v", fake.Calls("getUpdates"))
	})
	if err := ru.relay.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

func TestOffRelay(t *testing.T) {
	t.Parallel()
	r, err := New(Config{ChatID: "42"}, nil, nil)
	if err != nil {
		t.Fatalf("New without token: %v", err)
	}
	if r.Enabled() {
		t.Fatal("relay without token is enabled")
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if err := r.Send(context.Background(), "m1", "", "architect", "hi"); !errors.Is(err, ErrUnconfigured) {
		t.Fatalf("Send = %v, want ErrUnconfigured", err)
	}
	if ErrUnconfigured.Error() != "telegram_unconfigured" {
		t.Fatalf("ErrUnconfigured text = %q", ErrUnconfigured.Error())
	}
	if st := r.Status(); st.State != StateOff || st.OwnerChat != "42" {
		t.Fatalf("status = %+v", st)
	}
	js, err := json.Marshal(r.Status())
	if err != nil || !strings.Contains(string(js), `"state":"off"`) || strings.Contains(string(js), "lastPollAt") {
		t.Fatalf("status JSON = %s, %v", js, err)
	}

	var nilRelay *Relay
	if err := nilRelay.Run(context.Background()); err != nil {
		t.Fatalf("nil Run = %v", err)
	}
	if err := nilRelay.Send(context.Background(), "m", "", "", "x"); !errors.Is(err, ErrUnconfigured) {
		t.Fatalf("nil Send = %v", err)
	}
	if st := nilRelay.Status(); st.State != StateOff {
		t.Fatalf("nil Status = %+v", st)
	}
	if c, at := nilRelay.LastInbound(); c != "" || !at.IsZero() || nilRelay.OwnerChat() != "" {
		t.Fatal("nil relay reports a chat")
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	tests := []struct {
		name    string
		cfg     Config
		store   Store
		deliver DeliverFunc
	}{
		{"bad URL", Config{Token: testToken, APIURL: "ftp://x"}, store, store.Deliver},
		{"URL without host", Config{Token: testToken, APIURL: "http://"}, store, store.Deliver},
		{"token with slash", Config{Token: "1:a/b"}, store, store.Deliver},
		{"no store", Config{Token: testToken}, nil, store.Deliver},
		{"no deliver", Config{Token: testToken}, store, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, tt.store, tt.deliver); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
}

func TestOwnerChat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{ChatID: "42", Allowlist: []string{"43"}}, "42"},
		{Config{Allowlist: []string{" 43 ", "44"}}, "43"},
		{Config{}, ""},
	}
	for _, tt := range tests {
		r, err := New(tt.cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.OwnerChat(); got != tt.want {
			t.Errorf("OwnerChat(%+v) = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

func TestPollTimeoutFloor(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	r, err := New(Config{Token: testToken, PollTimeout: 10 * time.Millisecond}, store, store.Deliver)
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.PollTimeout != time.Second {
		t.Fatalf("PollTimeout = %v, want the 1s floor", r.cfg.PollTimeout)
	}
}
