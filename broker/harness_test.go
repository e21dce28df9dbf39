package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/testutil"
	"hm/journal"
	"hm/roles"
)

const operatorToken = "op-secret"

type harness struct {
	t      testing.TB
	b      *broker.Broker
	ledger *journal.Ledger
	srv    *httptest.Server
	url    string
	dbPath string
	tokens *broker.Tokens
	panes  *fakePanes
}

type harnessOpt func(*broker.Config, *broker.Deps)

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessAt(t, filepath.Join(t.TempDir(), "ledger.db"), 1, opts...)
}

func newHarnessAt(t testing.TB, dbPath string, session int, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessLedger(t, dbPath, session, journal.Options{}, opts...)
}

// newHarnessLedger is newHarnessAt with the ledger opened with jopts (its
// Logger is set here).
func newHarnessLedger(t testing.TB, dbPath string, session int, jopts journal.Options, opts ...harnessOpt) *harness {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	jopts.Logger = logger
	ledger, err := journal.Open(context.Background(), dbPath, jopts)
	if err != nil {
		t.Fatal(err)
	}
	tokens := broker.NewTokens(operatorToken)
	cfg := broker.Config{
		Team: roles.Default(), Session: session, SessionID: "app-session-" + itoa(session), Tokens: tokens,
		Logger: logger,
	}
	deps := broker.Deps{Ledger: ledger}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	b := broker.New(cfg, deps)
	srv := httptest.NewServer(b.Handler())
	h := &harness{t: t, b: b, ledger: ledger, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/", dbPath: dbPath, tokens: tokens}
	if p, ok := deps.Panes.(*fakePanes); ok {
		h.panes = p
	}
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	h.b.Close()
	h.srv.Close()
	h.ledger.Close()
}

func itoa(n int) string { return strconv.Itoa(n) }

func ctxT(t testing.TB) context.Context { return testutil.Context(t) }

// dial connects a raw client.
func (h *harness) dial() *client.Client {
	h.t.Helper()
	c, err := client.Dial(ctxT(h.t), h.url)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// as connects and registers as role with its pane token (operator for "user").
func (h *harness) as(role string, listen bool) *client.Client {
	h.t.Helper()
	tok := operatorToken
	if role != "user" {
		tok = h.tokens.Issue(role)
	}
	c, err := client.DialToken(ctxT(h.t), h.url, tok)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	if _, err := c.Register(ctxT(h.t), role, tok, listen); err != nil {
		h.t.Fatalf("register %s: %v", role, err)
	}
	return c
}

func send(t *testing.T, c *client.Client, f proto.Frame) proto.Ack {
	t.Helper()
	ack, _, err := c.Send(ctxT(t), f)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return ack
}

// sendPipelined writes frame(id) for every id, up to 32 ahead of their
// ACKs (within the small send queues some tests configure), reads the
// ACKs as they come, and fails unless each is ok.
func sendPipelined(t *testing.T, c *client.Client, ids []string, frame func(id string) proto.Frame) {
	t.Helper()
	// One deadline for them all, as long as make test's load may need.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	written := make(chan error, 1)
	window := make(chan struct{}, 32)
	go func() {
		for _, id := range ids {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				written <- ctx.Err()
				return
			}
			if err := c.WriteJSON(ctx, frame(id)); err != nil {
				written <- fmt.Errorf("write %s: %w", id, err)
				return
			}
		}
		written <- nil
	}()
	for n := 0; n < len(ids); {
		typ, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d ACKs: %v", n, len(ids), err)
		}
		if typ != proto.TypeSendAck {
			continue
		}
		var a proto.Ack
		if err := json.Unmarshal(raw, &a); err != nil || !a.OK {
			t.Fatalf("ACK %d: %s (%v)", n, raw, err)
		}
		n++
		<-window
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// nextOf reads frames until one of type typ arrives.
func nextOf(t *testing.T, c *client.Client, typ string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		got, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if got == typ {
			return raw
		}
	}
}

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// fakePanes records deliveries and types them at once.
type fakePanes struct {
	mu     sync.Mutex
	hosted map[string]bool
	got    map[string][]broker.PaneDelivery
}

func withPanes(roles ...string) harnessOpt {
	return func(_ *broker.Config, d *broker.Deps) {
		p := &fakePanes{hosted: map[string]bool{}, got: map[string][]broker.PaneDelivery{}}
		for _, r := range roles {
			p.hosted[r] = true
		}
		d.Panes = p
	}
}

func (p *fakePanes) Hosted(role string) bool { p.mu.Lock(); defer p.mu.Unlock(); return p.hosted[role] }
func (p *fakePanes) Deliver(role string, d broker.PaneDelivery) {
	p.mu.Lock()
	p.got[role] = append(p.got[role], d)
	p.mu.Unlock()
	// Typed, Enter pressed, and the program reacted.
	d.Typed()
	d.Submitted(true)
}
func (p *fakePanes) Health(role string) (string, time.Time, bool) {
	if p.Hosted(role) {
		return "idle", time.Now(), true
	}
	return "", time.Time{}, false
}
func (p *fakePanes) count(role string) int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.got[role]) }
