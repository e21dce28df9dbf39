package hub_test

import (
	"log/slog"
	"os"
	"testing"

	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/hub"
)

// TestSessionNeverRepeats: the session counter lives in app-status.json,
// but the ledger remembers the sessions it holds. When app-status.json is
// lost or put back from an older copy, the next hub still takes a session
// the ledger has never seen: a repeated session would merge two sessions'
// rows, and a message repeating an earlier one's header and body would be
// dropped as a duplicate.
func TestSessionNeverRepeats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reset func(t *testing.T, lay layout.Layout, old layout.AppStatus)
	}{
		{"app-status.json removed", func(t *testing.T, lay layout.Layout, _ layout.AppStatus) {
			if err := os.Remove(lay.AppStatus()); err != nil {
				t.Fatal(err)
			}
		}},
		{"app-status.json from an older copy", func(t *testing.T, lay layout.Layout, old layout.AppStatus) {
			if err := lay.WriteAppStatus(old); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			noPanes := hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }}
			first := startHub(t, noPanes)
			lay := first.h.Layout
			old, err := lay.ReadAppStatus()
			if err != nil {
				t.Fatal(err)
			}
			first.stop()
			second := startHubAt(t, first.root, noPanes)
			arch := second.as("architect", false)
			if ack := send(t, arch, proto.Frame{Target: "builder", Content: "hello"}); !ack.OK {
				t.Fatalf("send: %+v", ack)
			}
			used := second.h.Session
			second.stop()

			tc.reset(t, lay, old)
			third := startHubAt(t, first.root, noPanes)
			if third.h.Session <= used {
				t.Fatalf("session %d after %s; the ledger holds session %d already", third.h.Session, tc.name, used)
			}
			st, err := lay.ReadAppStatus()
			if err != nil || st.Session != third.h.Session {
				t.Fatalf("app-status.json: %+v, %v; want session %d", st, err, third.h.Session)
			}
		})
	}
}

// TestRefusedLedgerKeepsSession: a hub that cannot open its ledger (here a
// garbage ledger key) does not start, and the session counter does not
// move, so the next hub that does start takes the next session, not one
// after a gap.
func TestRefusedLedgerKeepsSession(t *testing.T) {
	t.Parallel()
	lay := layout.Layout{Root: t.TempDir()}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.LedgerKey(), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := hub.Run(t.Context(), hub.Options{Layout: lay, Port: 0, NoPanes: true, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if err == nil {
		t.Fatal("a hub with a garbage ledger key started")
	}
	if st, rerr := lay.ReadAppStatus(); rerr != nil || st.Session != 0 {
		t.Fatalf("a hub refused with %q moved the session counter: %+v, %v", err, st, rerr)
	}
}
