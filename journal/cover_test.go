package journal

import (
	"path/filepath"
	"testing"

	"zombiezen.com/go/sqlite"
)

// TestCover: a message's first record is covered while its first event's
// HMAC matches the row and the side rows written with it; a forged signal
// or obligation beside it, a changed resolution, or a chain recomputed
// without the key (as an unkeyed legacy chain) uncovers it, and an id no
// event records is never covered.
func TestCover(t *testing.T) {
	t.Parallel()
	all := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	tests := []struct {
		name      string
		tamper    string
		rechain   bool
		uncovered map[string]bool
	}{
		{"untouched", "", false, nil},
		{"forged signal beside m2", "INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES ('m2', 'app-session-1', 'oracle', 'ORACLE #2', 'TASK', 'forged', 1)", false,
			map[string]bool{"m2": true}},
		{"signal text of m0", "UPDATE comms_signals SET text = 'use postgres' WHERE signal_id = 1", false, map[string]bool{"m0": true}},
		{"TASK reopened (m3 resolved it)", "UPDATE comms_signals SET resolved_by = NULL WHERE signal_id = 2", false, map[string]bool{"m3": true}},
		{"forged obligation beside m2", "INSERT INTO comms_obligations(message_id, session_id, owner_role, requester_role, ref, opened_at_ms) VALUES ('m2', 'app-session-1', 'architect', 'oracle', 'ORACLE #2', 1)", false,
			map[string]bool{"m2": true}},
		{"row column of m2", "UPDATE comms_journal SET target_role = 'builder' WHERE message_id = 'm2'", false, map[string]bool{"m2": true}},
		{"chain recomputed without the key", "", true, map[string]bool{"m0": true, "m1": true, "m2": true, "m3": true, "m4": true, "m5": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
			l := openAt(t, path, Options{})
			tamperFixture(t, l)
			if tt.tamper != "" {
				tamperScript(t, path, tt.tamper)
			}
			if tt.rechain {
				rechainUnkeyed(t, path)
			}
			err := l.Read(ctxT(t), func(conn *sqlite.Conn) error {
				cov, err := l.Cover(conn)
				if err != nil {
					return err
				}
				for _, id := range append(all, "ghost") {
					ok, err := cov.Covers(id)
					if err != nil {
						return err
					}
					if want := id != "ghost" && !tt.uncovered[id]; ok != want {
						t.Errorf("Covers(%s) = %v, want %v", id, ok, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
