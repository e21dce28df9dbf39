package federation_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/federation"
	"hm/internal/federation/natstest"
	"hm/internal/ground/poll"
)

// TestDuplicateHubName: without --hub two roots on one machine get two
// names; a hub whose name another live hub of the team uses is refused by
// CheckName and reported by WatchPresence, while the presence a hub of the
// same root left (a restart) is its own.
func TestDuplicateHubName(t *testing.T) {
	srv := natstest.Start(t)
	host, _ := os.Hostname()
	r1, r2 := t.TempDir(), t.TempDir()
	if a, b := connectAt(t, srv.URL(), "", r1).Hub(), connectAt(t, srv.URL(), "", r2).Hub(); a == b || a != federation.DefaultHub(host, federation.Origin(host, r1)) {
		t.Fatalf("default names %q and %q: want two names, the first %q", a, b, federation.DefaultHub(host, federation.Origin(host, r1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := connectAt(t, srv.URL(), "same", r1)
	if err := first.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []error
	stop, err := first.WatchPresence(func(_ federation.Presence, err error) {
		mu.Lock()
		seen = append(seen, err)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	probe := connectAt(t, srv.URL(), "same", t.TempDir())
	tests := []struct {
		name      string
		root      string
		duplicate bool
	}{
		{"the same root again (a restart)", r1, false},
		{"another root, the same name", r2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// the first hub's presence, stored (as a third root sees it)
			if err := first.PublishPresence([]federation.RoleState{{Role: "architect", State: "idle"}}, time.Minute); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 30*time.Second, func() error {
				err := probe.CheckName(ctx)
				return poll.Want(err != nil && strings.Contains(err.Error(), federation.Origin(host, r1)), "the first hub's presence not stored yet: %v", err)
			})
			c := connectAt(t, srv.URL(), "same", tc.root)
			err := c.CheckName(ctx)
			if got := errors.Is(err, federation.ErrDuplicateHub); got != tc.duplicate {
				t.Fatalf("CheckName = %v, duplicate %v", err, tc.duplicate)
			}
			if tc.duplicate && !strings.Contains(err.Error(), "--hub") {
				t.Errorf("CheckName = %v: want it to say how to fix it", err)
			}
			mu.Lock()
			seen = nil
			mu.Unlock()
			if err := c.PublishPresence([]federation.RoleState{{Role: "builder", State: "idle"}}, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := first.PublishPresence(nil, time.Minute); err != nil { // a barrier: seen after c's
				t.Fatal(err)
			}
			poll.For(t, 30*time.Second, func() error {
				mu.Lock()
				defer mu.Unlock()
				if !tc.duplicate {
					return poll.Want(len(seen) == 0, "own-origin presence reported: %v", seen)
				}
				return poll.Want(len(seen) == 1 && errors.Is(seen[0], federation.ErrDuplicateHub), "WatchPresence reported %v", seen)
			})
		})
	}
}
