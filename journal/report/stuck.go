package report

import (
	"context"
	"fmt"

	"zombiezen.com/go/sqlite"

	"hm/journal"
)

// StuckMessage is a message that a pane could not get submitted (ack
// status stuck), with the reason its latest stuck event gave.
type StuckMessage struct {
	journal.Message
	Reason string
}

// StuckListLimit bounds the stuck messages `hm status` lists.
const StuckListLimit = 20

// Stuck returns the newest stuck messages of the session sessionID (""
// for any), at most limit of them, oldest first; more tells whether there
// are more.
func Stuck(ctx context.Context, l *journal.Ledger, sessionID string, limit int) (out []StuckMessage, more bool, err error) {
	if l == nil {
		return nil, false, fmt.Errorf("stuck messages: %w", ErrNoLedger)
	}
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		out, more, err = loadStuck(conn, sessionID, limit)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("stuck messages: %w", err)
	}
	return out, more, nil
}

func loadStuck(conn *sqlite.Conn, sessionID string, limit int) ([]StuckMessage, bool, error) {
	return loadNewest(conn, qStuck, limit, func(stmt *sqlite.Stmt) StuckMessage {
		return StuckMessage{Message: journal.ScanMessage(stmt, 0), Reason: stmt.ColumnText(journal.MessageColumnCount)}
	}, sessionID)
}
