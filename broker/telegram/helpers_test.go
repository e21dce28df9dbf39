package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/testutil"
)

const testToken = "424242:test-secret"

// errJournal stands in for the hub's journal_unavailable.
var errJournal = errors.New("journal_unavailable")

// delivery is one Deliver call.
type delivery struct {
	In   Inbound
	Text string
}

// finish is a FinishPart outcome.
type finish struct {
	OK     bool
	Reason string
}

// memStore is an in-memory Store plus a DeliverFunc. It does not dedupe, so
// tests see every call the relay makes.
type memStore struct {
	mu        sync.Mutex
	kv        map[string]string
	parts     []Part
	finished  map[string]finish
	delivered []delivery
	refused   []Inbound
	calls     []int64 // update ids of every Deliver call, failed or not

	failDeliver    int                                         // next N Deliver calls fail
	failRecordPart int                                         // next N RecordPart calls fail
	failKVGet      int                                         // next N KVGet calls fail
	failKVSet      int                                         // next N KVSet calls fail
	partDone       map[string]bool                             // RecordPart answers ErrPartDelivered
	onDeliver      func(ctx context.Context, in Inbound) error // runs before the commit
}

func newMemStore() *memStore {
	return &memStore{kv: map[string]string{}, finished: map[string]finish{}, partDone: map[string]bool{}}
}

func (m *memStore) KVGet(ctx context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failKVGet > 0 {
		m.failKVGet--
		return "", false, errJournal
	}
	v, ok := m.kv[key]
	return v, ok, nil
}

func (m *memStore) KVSet(ctx context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failKVSet > 0 {
		m.failKVSet--
		return errJournal
	}
	m.kv[key] = value
	return nil
}

func (m *memStore) RecordPart(ctx context.Context, p Part) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.partDone[p.ID] {
		return ErrPartDelivered
	}
	if m.failRecordPart > 0 {
		m.failRecordPart--
		return errJournal
	}
	m.parts = append(m.parts, p)
	return nil
}

func (m *memStore) FinishPart(ctx context.Context, partID string, ok bool, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished[partID] = finish{OK: ok, Reason: reason}
	return nil
}

func (m *memStore) RecordRefused(ctx context.Context, in Inbound) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused = append(m.refused, in)
	return nil
}

func (m *memStore) Deliver(ctx context.Context, in Inbound, text string) error {
	m.mu.Lock()
	m.calls = append(m.calls, in.UpdateID)
	hook := m.onDeliver
	if m.failDeliver > 0 {
		m.failDeliver--
		m.mu.Unlock()
		return errJournal
	}
	m.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, in); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delivered = append(m.delivered, delivery{In: in, Text: text})
	return nil
}

func (m *memStore) snapshot() (delivered []delivery, refused []Inbound, calls []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]delivery(nil), m.delivered...), append([]Inbound(nil), m.refused...), append([]int64(nil), m.calls...)
}

func (m *memStore) get(key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kv[key]
}

func (m *memStore) finishOf(id string) (finish, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.finished[id]
	return f, ok
}

func (m *memStore) recordedParts() []Part {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Part(nil), m.parts...)
}

// testLogger logs to the test's output.
func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelDebug) }

// newFake starts a fake Bot API closed at the end of the test.
func newFake(t testing.TB) *telegramtest.Server {
	t.Helper()
	s := telegramtest.NewServer(testToken)
	t.Cleanup(s.Close)
	return s
}

// testConfig is a fast config pointing at the fake.
func testConfig(t testing.TB, fake *telegramtest.Server) Config {
	return Config{
		Token:          testToken,
		ChatID:         "42",
		Allowlist:      []string{"43", "@teamchan"},
		APIURL:         fake.URL,
		PollTimeout:    time.Second,
		Logger:         testLogger(t),
		Backoff:        10 * time.Millisecond,
		MaxBackoff:     200 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
	}
}

// runner is a Relay running in the background.
type runner struct {
	relay  *Relay
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// stop cancels Run and waits for it, failing the test if it hangs. It
// returns how long Run took to return. Later calls do nothing.
func (r *runner) stop(t testing.TB) time.Duration {
	t.Helper()
	var took time.Duration
	r.once.Do(func() {
		start := time.Now()
		r.cancel()
		select {
		case err := <-r.done:
			took = time.Since(start)
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of cancel")
		}
	})
	return took
}

// startRelay creates a relay on store and runs it until the test ends (or
// stop is called).
func startRelay(t testing.TB, cfg Config, store *memStore) *runner {
	t.Helper()
	r, err := New(cfg, store, store.Deliver)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ru := &runner{relay: r, cancel: cancel, done: make(chan error, 1)}
	go func() { ru.done <- r.Run(ctx) }()
	t.Cleanup(func() { ru.stop(t) })
	return ru
}

// deliveredIDs lists the update ids of successful deliveries.
func deliveredIDs(ds []delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.In.UpdateID
	}
	return out
}

// stripSpace removes all whitespace.
func stripSpace(s string) string {
	return strings.Join(strings.Fields(s), "")
}
