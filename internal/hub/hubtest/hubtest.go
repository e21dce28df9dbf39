// Package hubtest runs a real hub in the test's process, on a free port,
// for the tests of packages that talk to one (internal/cli, internal/mcpserver).
package hubtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/hub"
)

// Start runs hub.Run for root with opts (its Layout, Port 0, a logger of
// warnings to t's output, Ready and, unless opts has one, an empty Getenv
// are set here) and waits until it serves. stop ends it and checks that Run returned no
// error; it is also run at t's cleanup.
func Start(t testing.TB, root string, opts hub.Options) (h *hub.Hub, stop func()) {
	t.Helper()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan *hub.Hub, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts.Layout, opts.Port = lay, 0
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.Ready = func(h *hub.Hub) { ready <- h }
	if opts.Getenv == nil { // no environment of the test's own
		opts.Getenv = func(string) string { return "" }
	}
	go func() { done <- hub.Run(ctx, opts) }()
	select {
	case h = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("hub.Run: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("hub did not become ready")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("hub.Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop
}
