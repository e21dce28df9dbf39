package hub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"hm/internal/ground/layout"
	"hm/internal/hub"
)

// TestOneHubPerRoot: a second hub on a root that already has one is refused
// with the first one's pid and port, whether it asks for another port or
// the same one, and it touches neither the session counter nor hub.json.
// (Before the lock, a second hub on another port ran alongside the first.)
func TestOneHubPerRoot(t *testing.T) {
	t.Parallel()
	first := startHub(t, hubConfig{})
	lay := first.h.Layout
	before, err := lay.ReadAppStatus()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a hub is already running for this root (pid %d, port %d)", os.Getpid(), first.h.Port)
	for _, port := range []int{0, first.h.Port} {
		t.Run(fmt.Sprintf("port %d", port), func(t *testing.T) {
			err := hub.Run(t.Context(), hub.Options{Layout: lay, Port: port, NoPanes: true, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
			var are *layout.AlreadyRunningError
			if !errors.As(err, &are) || err.Error() != want {
				t.Fatalf("second hub: %v; want %q", err, want)
			}
		})
	}
	after, err := lay.ReadAppStatus()
	if err != nil {
		t.Fatal(err)
	}
	if after.Session != before.Session {
		t.Fatalf("a refused hub moved the session counter %d -> %d", before.Session, after.Session)
	}
	info, err := lay.ReadHubInfo()
	if err != nil || info.Port != first.h.Port {
		t.Fatalf("hub.json after the refusal: %+v, %v", info, err)
	}

	// Once the first hub has stopped, the root is free again.
	first.stop()
	again := startHubAt(t, first.root, hubConfig{})
	if again.h.Session != before.Session+1 {
		t.Fatalf("session after restart = %d, want %d", again.h.Session, before.Session+1)
	}
}

// TestPortInUseByAnotherRoot: a hub for another root on a taken port says
// the port is in use and how to choose another, not a bare socket error.
func TestPortInUseByAnotherRoot(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = hub.Run(ctx, hub.Options{Layout: layout.Layout{Root: t.TempDir()}, Port: port, NoPanes: true, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d on 127.0.0.1 is already in use", port)) || !strings.Contains(err.Error(), "--port") {
		t.Fatalf("hub on a taken port: %v", err)
	}
}

// TestWeakTokenRefusedAtStart: a hub whose hub-token is short or readable by
// others does not start, and the session counter does not move.
func TestWeakTokenRefusedAtStart(t *testing.T) {
	t.Parallel()
	lay := layout.Layout{Root: t.TempDir()}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.Token(), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := hub.Run(t.Context(), hub.Options{Layout: lay, Port: 0, NoPanes: true, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if !errors.Is(err, layout.ErrWeakToken) || !strings.Contains(err.Error(), "hm token rotate") {
		t.Fatalf("hub with a one-character token: %v", err)
	}
	if st, err := lay.ReadAppStatus(); err == nil && st.Session != 0 {
		t.Fatalf("a refused hub moved the session counter to %d", st.Session)
	}
}
