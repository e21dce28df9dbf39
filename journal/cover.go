package journal

import (
	"fmt"

	"zombiezen.com/go/sqlite"
)

// Cover tells, one message at a time, whether the keyed hash chain covers
// a message's first record: its row as committed and the signals and
// obligation written with it (and the signals it resolved). It checks the
// message's first event's HMAC against the change rebuilt from the tables,
// as Verify does for every event, without walking the chain: a row, signal
// or obligation inserted into the database directly (no chained event, or
// one whose HMAC no longer matches) is not covered, and neither are rows
// of events made before the ledger had a key (the unkeyed rule covered no
// signals). The reports typed into panes build only from covered rows.
// A Cover lives within one read (the conn it was made with).
type Cover struct {
	conn  *sqlite.Conn
	mac   *chainMAC
	known map[string]bool
}

// Cover returns a Cover reading through conn (from Read), or ErrNoKey /
// ErrBadKey when the ledger key cannot be loaded.
func (l *Ledger) Cover(conn *sqlite.Conn) (*Cover, error) {
	key, err := l.ledgerKey()
	if err != nil {
		return nil, fmt.Errorf("journal cover: %w", err)
	}
	return &Cover{conn: conn, mac: newChainMAC(key), known: make(map[string]bool)}, nil
}

// firstEventQuery reads a message's first event joined with its row, in
// the columns of eventsQuery.
const firstEventQuery = eventsSelect + ` WHERE e.message_id = ? ORDER BY e.event_id LIMIT 1`

// Covers reports whether the chain covers messageID's first record (see
// Cover). An unknown message is not covered.
func (c *Cover) Covers(messageID string) (bool, error) {
	if ok, seen := c.known[messageID]; seen {
		return ok, nil
	}
	ok := false
	err := execArgs(c.conn, firstEventQuery, func(stmt *sqlite.Stmt) error {
		if stmt.ColumnType(7) == sqlite.TypeNull {
			return nil // no row: nothing to cover
		}
		id, event, atMs, detail := stmt.ColumnInt64(0), stmt.ColumnText(2), stmt.ColumnInt64(3), stmt.ColumnText(4)
		prev, hash := stmt.ColumnText(5), stmt.ColumnText(6)
		d := parseDetail(detail)
		var row Message
		readJoinedRow(stmt, &row, messageID, &d)
		ch, err := c.firstChange(messageID, &row)
		if err != nil {
			return err
		}
		ok = c.mac.eventMatches(hash, prev, id, messageID, event, atMs, detail, &ch)
		return nil
	}, messageID)
	if err != nil {
		return false, fmt.Errorf("journal cover %s: %w", messageID, err)
	}
	c.known[messageID] = ok
	return ok, nil
}

// firstChange rebuilds what a message's first event records beyond its
// row: the signals written with it, those it resolved, its obligation (as
// Verify's loadSide reads them for every message).
func (c *Cover) firstChange(messageID string, row *Message) (change, error) {
	ch := change{row: row}
	err := execArgs(c.conn, "SELECT "+SignalColumnsAs("")+" FROM comms_signals WHERE message_id = ? ORDER BY signal_id", func(stmt *sqlite.Stmt) error {
		ch.signals = append(ch.signals, ScanSignal(stmt, 0))
		return nil
	}, messageID)
	if err != nil {
		return ch, fmt.Errorf("read signals: %w", err)
	}
	err = execArgs(c.conn, "SELECT signal_id FROM comms_signals WHERE resolved_by = ? ORDER BY signal_id", func(stmt *sqlite.Stmt) error {
		ch.resolved = append(ch.resolved, stmt.ColumnInt64(0))
		return nil
	}, messageID)
	if err != nil {
		return ch, fmt.Errorf("read resolved signals: %w", err)
	}
	err = execArgs(c.conn, "SELECT "+ObligationColumnsAs("")+" FROM comms_obligations WHERE message_id = ?", func(stmt *sqlite.Stmt) error {
		o := ScanObligation(stmt, 0)
		ch.obligation = &o
		return nil
	}, messageID)
	if err != nil {
		return ch, fmt.Errorf("read obligation: %w", err)
	}
	return ch, nil
}
