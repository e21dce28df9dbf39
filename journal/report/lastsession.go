package report

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"

	"hm/journal"
	"hm/roles"
)

// qSessionGroups lists the session ids of the running per-session counts:
// one row per session, status, channel and sender, so a short table.
const qSessionGroups = `SELECT DISTINCT session_id FROM comms_session_counts`

// LastSession returns the highest N of the "app-session-N" sessions the
// ledger holds rows of, 0 when it holds none. A new hub's session must be
// above it even when app-status.json was lost or put back from an older
// copy (SPEC §10).
func LastSession(ctx context.Context, l *journal.Ledger) (int, error) {
	if l == nil {
		return 0, fmt.Errorf("last session: %w", ErrNoLedger)
	}
	last := 0
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return exec(conn, qSessionGroups, func(stmt *sqlite.Stmt) error {
			if n, ok := roles.SessionNumber(stmt.ColumnText(0)); ok {
				last = max(last, n)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("last session: %w", err)
	}
	return last, nil
}
