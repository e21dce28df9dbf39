package roles

import (
	"strings"
	"testing"
)

func TestSessionNumber(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id string
		n  int
		ok bool
	}{
		{"app-session-7", 7, true}, {"app-session-007", 7, true}, {"app-session-", 0, false},
		{"app-session-7a", 0, false}, {"session-7", 0, false}, {"app-session--1", 0, false},
		{"app-session-99999999999999999999999", 0, false},
	} {
		n, ok := SessionNumber(c.id)
		if n != c.n || ok != c.ok {
			t.Errorf("SessionNumber(%q) = %d, %v; want %d, %v", c.id, n, ok, c.n, c.ok)
		}
	}
	if got := SessionID(7); got != "app-session-7" {
		t.Errorf("SessionID(7) = %q, want app-session-7", got)
	}
}

func FuzzSessionNumber(f *testing.F) {
	for _, s := range []string{"app-session-1", "app-session-007", "app-session-", "app-session--3", "app-session-9999999999999999999999", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, ok := SessionNumber(id)
		if !ok {
			if n != 0 {
				t.Fatalf("SessionNumber(%q) = %d, false: want 0", id, n)
			}
			return
		}
		if n < 0 || !strings.HasPrefix(id, SessionPrefix) {
			t.Fatalf("SessionNumber(%q) = %d, true", id, n)
		}
		back, ok := SessionNumber(SessionID(n))
		if !ok || back != n {
			t.Fatalf("round trip of %d: %d, %v", n, back, ok)
		}
	})
}
