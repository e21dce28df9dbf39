package hub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/promptlog"
	"hm/internal/ground/testutil"
	"hm/internal/hub"
	"hm/journal"

	"go.uber.org/goleak"
)

var fakeAgent string

func TestMain(m *testing.M) {
	var err error
	if fakeAgent, err = testutil.BuildFakeAgent(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		testutil.RemoveBuilds()
		os.Exit(1)
	}
	// Fails the run if a test left a goroutine behind.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testutil.RemoveBuilds()
		os.Exit(code)
	}))
}

// testHub runs hub.Run in the background for one test.
type testHub struct {
	t      *testing.T
	h      *hub.Hub
	root   string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

type hubConfig struct {
	settings string // settings.json content ("" = none)
	opts     func(*hub.Options)
}

// agentCmd is a settings.json command running the fake agent, logging
// prompts to <root>/<name>.jsonl.
func agentCmd(root, name string, env ...string) string {
	base := []string{"FAKEAGENT_LOG=" + filepath.Join(root, name+".jsonl"), "FAKEAGENT_ENTER_MS=60"}
	return strings.Join(append(append(base, env...), fakeAgent), " ")
}

func startHub(t *testing.T, cfg hubConfig) *testHub {
	t.Helper()
	root := t.TempDir()
	return startHubAt(t, root, cfg)
}

func startHubAt(t *testing.T, root string, cfg hubConfig) *testHub {
	t.Helper()
	th, err := tryStartHubAt(t, root, cfg)
	if err != nil {
		t.Fatalf("hub.Run: %v", err)
	}
	return th
}

// tryStartHubAt is startHubAt returning the error hub.Run returns when
// the hub does not come up.
func tryStartHubAt(t *testing.T, root string, cfg hubConfig) (*testHub, error) {
	t.Helper()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if cfg.settings != "" {
		if err := os.WriteFile(lay.Settings(), []byte(strings.ReplaceAll(cfg.settings, "$ROOT", root)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ready := make(chan *hub.Hub, 1)
	opts := hub.Options{
		Layout: lay, Port: 0, RateLimit: 0,
		Logger:         slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		Ready:          func(h *hub.Hub) { ready <- h },
		Getenv:         func(string) string { return "" },
		TriggerRescan:  200 * time.Millisecond,
		PaneMinBackoff: 50 * time.Millisecond,
		PaneMaxBackoff: 200 * time.Millisecond,
	}
	if cfg.opts != nil {
		cfg.opts(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHub{t: t, root: root, cancel: cancel, done: make(chan error, 1)}
	go func() { th.done <- hub.Run(ctx, opts) }()
	select {
	case th.h = <-ready:
	case err := <-th.done:
		cancel()
		if err == nil {
			err = errors.New("hub.Run returned nil before the hub was ready")
		}
		return nil, err
	case <-time.After(30 * time.Second):
		t.Fatal("hub did not become ready")
	}
	t.Cleanup(th.stop)
	return th, nil
}

// stop cancels the hub and waits for Run to return.
func (th *testHub) stop() {
	th.once.Do(func() {
		th.cancel()
		select {
		case err := <-th.done:
			if err != nil {
				th.t.Errorf("hub.Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			th.t.Error("hub did not stop")
		}
	})
}

func (th *testHub) token() string {
	tok, err := th.h.Layout.ReadToken()
	if err != nil {
		th.t.Fatal(err)
	}
	return tok
}

func ctxT(t testing.TB) context.Context { return testutil.Context(t) }

// as connects as role with the operator token (or a given token).
func (th *testHub) as(role string, listen bool, token ...string) *client.Client {
	th.t.Helper()
	c, err := client.Dial(ctxT(th.t), th.h.URL())
	if err != nil {
		th.t.Fatal(err)
	}
	th.t.Cleanup(func() { c.CloseNow() })
	tok := th.token()
	if len(token) > 0 {
		tok = token[0]
	}
	if _, err := c.Register(ctxT(th.t), role, tok, listen); err != nil {
		th.t.Fatalf("register %s: %v", role, err)
	}
	return c
}

func send(t *testing.T, c *client.Client, f proto.Frame) proto.Ack {
	t.Helper()
	if f.Type == "" {
		f.Type = "send"
	}
	ack, _, err := c.Send(ctxT(t), f)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return ack
}

// prompts reads the fake agent's prompt log.
func prompts(t *testing.T, path string) []string {
	t.Helper()
	ps, err := promptlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Full() // a pointer line with its file's content
	}
	return out
}

func containsPrompt(ps []string, sub string) bool {
	for _, p := range ps {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

func row(t *testing.T, th *testHub, id string) journal.Message {
	t.Helper()
	m, err := th.h.Ledger.Get(context.Background(), id)
	if err != nil {
		return journal.Message{}
	}
	return m
}
