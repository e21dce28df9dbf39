package journal

import (
	"context"
	"fmt"
	"strings"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// MessageColumns lists the comms_journal columns in the order ScanMessage
// reads them.
const MessageColumns = "row_id, message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority, sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms"

// MessageColumnCount is the number of columns in MessageColumns.
const MessageColumnCount = 21

// MessageColumnsAs returns MessageColumns with every column qualified by
// alias ("j" gives "j.row_id, j.message_id, ...") for joins.
func MessageColumnsAs(alias string) string {
	cols := strings.Split(MessageColumns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// ScanMessage reads a Message from stmt, whose columns first..first+20 are
// MessageColumns in order. NULL seq and sent_at_ms read as 0.
func ScanMessage(stmt *sqlite.Stmt, first int) Message {
	c := first
	return Message{
		RowID:        stmt.ColumnInt64(c + 0),
		MessageID:    stmt.ColumnText(c + 1),
		SessionID:    stmt.ColumnText(c + 2),
		SenderRole:   stmt.ColumnText(c + 3),
		TargetRole:   stmt.ColumnText(c + 4),
		Channel:      stmt.ColumnText(c + 5),
		Direction:    stmt.ColumnText(c + 6),
		Seq:          stmt.ColumnInt64(c + 7),
		Header:       stmt.ColumnText(c + 8),
		Priority:     stmt.ColumnText(c + 9),
		SentAtMs:     stmt.ColumnInt64(c + 10),
		BrokeredAtMs: stmt.ColumnInt64(c + 11),
		RawBody:      stmt.ColumnText(c + 12),
		BodyHash:     stmt.ColumnText(c + 13),
		BodyBytes:    stmt.ColumnInt64(c + 14),
		Status:       status.Status(stmt.ColumnText(c + 15)),
		AckStatus:    status.Stage(stmt.ColumnText(c + 16)),
		ErrorCode:    status.Code(stmt.ColumnText(c + 17)),
		Attempt:      stmt.ColumnInt64(c + 18),
		MetadataJSON: stmt.ColumnText(c + 19),
		UpdatedAtMs:  stmt.ColumnInt64(c + 20),
	}
}

// execArgs runs a cached statement with positional args, calling fn per row.
func execArgs(conn *sqlite.Conn, query string, fn func(*sqlite.Stmt) error, args ...any) error {
	return sqlitex.Execute(conn, query, &sqlitex.ExecOptions{Args: args, ResultFunc: fn})
}

func getMessage(conn *sqlite.Conn, messageID string) (m Message, found bool, err error) {
	err = execArgs(conn, "SELECT "+MessageColumns+" FROM comms_journal WHERE message_id = ?", func(stmt *sqlite.Stmt) error {
		m = ScanMessage(stmt, 0)
		found = true
		return nil
	}, messageID)
	if err != nil {
		return Message{}, false, fmt.Errorf("get %s: %w", messageID, err)
	}
	return m, found, nil
}

// Get returns the current row of a message, or ErrNotFound.
func (l *Ledger) Get(ctx context.Context, messageID string) (Message, error) {
	var m Message
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		var found bool
		var err error
		m, found, err = getMessage(conn, messageID)
		if err == nil && !found {
			err = fmt.Errorf("get %s: %w", messageID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Message{}, fmt.Errorf("journal: %w", err)
	}
	return m, nil
}

func (l *Ledger) queryMessages(ctx context.Context, query string, args ...any) ([]Message, error) {
	var out []Message
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, query, func(stmt *sqlite.Stmt) error {
			out = append(out, ScanMessage(stmt, 0))
			return nil
		}, args...)
	})
	return out, err
}

// Pending returns messages still in status brokered (committed, not yet
// handed to a pane or listener), in row order; targetRole "" means all.
func (l *Ledger) Pending(ctx context.Context, targetRole string) ([]Message, error) {
	var out []Message
	var err error
	if targetRole == "" {
		out, err = l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal INDEXED BY comms_journal_pending WHERE status = '"+string(status.Brokered)+"' ORDER BY row_id")
	} else {
		out, err = l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal INDEXED BY comms_journal_pending WHERE target_role = ? AND status = '"+string(status.Brokered)+"' ORDER BY row_id", targetRole)
	}
	if err != nil {
		return nil, fmt.Errorf("journal pending: %w", err)
	}
	return out, nil
}

// Unacked returns messages for targetRole handed to a listener and not
// acknowledged (status routed, ack_status delivered.websocket), in row
// order. Listener delivery is at-least-once until message-ack: these are
// offered again to the role's next listener.
func (l *Ledger) Unacked(ctx context.Context, targetRole string) ([]Message, error) {
	out, err := l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal INDEXED BY comms_journal_unacked WHERE target_role = ? AND status = '"+string(status.Routed)+"' AND ack_status = '"+string(status.DeliveredWebSocket)+"' ORDER BY row_id", targetRole)
	if err != nil {
		return nil, fmt.Errorf("journal unacked: %w", err)
	}
	return out, nil
}

// OwedIDs returns the ids of the rows a listener of targetRole is owed:
// pending (status brokered) and, with unacked, handed to a listener and not
// acknowledged. It reads the ids only (the broker's prune of a connection's
// delivered set needs no more), through the same indexes as Pending and
// Unacked.
func (l *Ledger) OwedIDs(ctx context.Context, targetRole string, unacked bool) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	add := func(stmt *sqlite.Stmt) error {
		out[stmt.ColumnText(0)] = struct{}{}
		return nil
	}
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		if err := execArgs(conn, "SELECT message_id FROM comms_journal INDEXED BY comms_journal_pending WHERE target_role = ? AND status = '"+string(status.Brokered)+"'", add, targetRole); err != nil || !unacked {
			return err
		}
		return execArgs(conn, "SELECT message_id FROM comms_journal INDEXED BY comms_journal_unacked WHERE target_role = ? AND status = '"+string(status.Routed)+"' AND ack_status = '"+string(status.DeliveredWebSocket)+"'", add, targetRole)
	})
	if err != nil {
		return nil, fmt.Errorf("journal owed ids: %w", err)
	}
	return out, nil
}

// BySenderSeq returns the rows of one session sent by sender with number
// seq, in row order (the hub's duplicate check for numbers older than its
// in-memory window; it walks the session's rows, so it is for rare use).
func (l *Ledger) BySenderSeq(ctx context.Context, sessionID, sender string, seq int64) ([]Message, error) {
	out, err := l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal INDEXED BY comms_journal_session WHERE session_id = ? AND sender_role = ? AND seq = ? ORDER BY row_id", sessionID, sender, seq)
	if err != nil {
		return nil, fmt.Errorf("journal by sender seq: %w", err)
	}
	return out, nil
}

// HistoryQuery selects rows for History.
type HistoryQuery struct {
	// Last keeps only the newest Last rows (<= 0: no limit).
	Last int
	// SessionID restricts to one session ("" = all sessions).
	SessionID string
	// AfterRowID keeps only rows with row_id > AfterRowID (for tailing).
	AfterRowID int64
}

// History returns ledger rows, oldest first (newest last).
func (l *Ledger) History(ctx context.Context, q HistoryQuery) ([]Message, error) {
	limit := int64(q.Last)
	if limit <= 0 {
		limit = -1
	}
	var out []Message
	var err error
	if q.SessionID == "" {
		out, err = l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal WHERE row_id > ? ORDER BY row_id DESC LIMIT ?", q.AfterRowID, limit)
	} else {
		out, err = l.queryMessages(ctx, "SELECT "+MessageColumns+" FROM comms_journal WHERE session_id = ? AND row_id > ? ORDER BY row_id DESC LIMIT ?", q.SessionID, q.AfterRowID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("journal history: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Hit is one Search result: the message and a snippet of its body around
// the match, with matches wrapped in [ and ].
type Hit struct {
	Message
	Excerpt string `json:"excerpt"`
}

// Search runs an FTS5 MATCH query over message bodies, newest first, at most
// limit hits (limit <= 0: 20). Rows committed within the last FTSInterval
// may not be indexed yet (FlushFTS forces it). Words with punctuation FTS5
// has no syntax for (hm-send, #12) are searched as phrases (ftsQuery). A
// malformed query returns ErrBadQuery wrapped with SQLite's message.
func (l *Ledger) Search(ctx context.Context, q string, limit int) ([]Hit, error) {
	return l.SearchWith(ctx, SearchQuery{Query: q, Limit: limit})
}

// ObligationColumnsAs lists comms_obligations columns, qualified by alias
// ("" for none), in the order ScanObligation reads them.
func ObligationColumnsAs(alias string) string {
	p := ""
	if alias != "" {
		p = alias + "."
	}
	return p + "obligation_id, " + p + "message_id, " + p + "session_id, " + p + "owner_role, " + p + "requester_role, " + p + "ref, " +
		p + "opened_at_ms, coalesce(" + p + "reminded_at_ms, 0), coalesce(" + p + "closed_by, ''), coalesce(" + p + "closed_at_ms, 0)"
}

// ObligationColumnCount is how many columns ScanObligation reads.
const ObligationColumnCount = 10

// ScanObligation reads an Obligation from the columns of
// ObligationColumnsAs starting at column first.
func ScanObligation(stmt *sqlite.Stmt, first int) Obligation {
	return Obligation{
		ObligationID:  stmt.ColumnInt64(first),
		MessageID:     stmt.ColumnText(first + 1),
		SessionID:     stmt.ColumnText(first + 2),
		OwnerRole:     stmt.ColumnText(first + 3),
		RequesterRole: stmt.ColumnText(first + 4),
		Ref:           stmt.ColumnText(first + 5),
		OpenedAtMs:    stmt.ColumnInt64(first + 6),
		RemindedAtMs:  stmt.ColumnInt64(first + 7),
		ClosedBy:      stmt.ColumnText(first + 8),
		ClosedAtMs:    stmt.ColumnInt64(first + 9),
	}
}

// SignalColumnsAs lists comms_signals columns, qualified by alias ("" for
// none), in the order ScanSignal reads them.
func SignalColumnsAs(alias string) string {
	p := ""
	if alias != "" {
		p = alias + "."
	}
	return p + "signal_id, " + p + "message_id, " + p + "session_id, " + p + "sender_role, " + p + "ref, " + p + "kind, " +
		p + "text, " + p + "at_ms, coalesce(" + p + "resolved_by, '')"
}

// SignalColumnCount is how many columns ScanSignal reads.
const SignalColumnCount = 9

// ScanSignal reads a Signal from the columns of SignalColumnsAs starting at
// column first.
func ScanSignal(stmt *sqlite.Stmt, first int) Signal {
	return Signal{
		SignalID:   stmt.ColumnInt64(first),
		MessageID:  stmt.ColumnText(first + 1),
		SessionID:  stmt.ColumnText(first + 2),
		SenderRole: stmt.ColumnText(first + 3),
		Ref:        stmt.ColumnText(first + 4),
		Kind:       stmt.ColumnText(first + 5),
		Text:       stmt.ColumnText(first + 6),
		AtMs:       stmt.ColumnInt64(first + 7),
		ResolvedBy: stmt.ColumnText(first + 8),
	}
}

// OpenObligations returns obligations not closed yet that have been open
// for at least olderThanMs milliseconds (0 = all open ones), oldest first.
// Reminded ones are included (RemindedAtMs != 0) so the caller can send
// exactly one reminder.
func (l *Ledger) OpenObligations(ctx context.Context, olderThanMs int64) ([]Obligation, error) {
	cutoff := int64(1<<63 - 1)
	if olderThanMs > 0 {
		cutoff = l.now().UnixMilli() - olderThanMs
	}
	var out []Obligation
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT "+ObligationColumnsAs("")+" FROM comms_obligations WHERE closed_by IS NULL AND opened_at_ms <= ? ORDER BY obligation_id", func(stmt *sqlite.Stmt) error {
			out = append(out, ScanObligation(stmt, 0))
			return nil
		}, cutoff)
	})
	if err != nil {
		return nil, fmt.Errorf("journal open obligations: %w", err)
	}
	return out, nil
}

// Obligations returns every obligation of a session ("" = all), open or
// closed, oldest first.
func (l *Ledger) Obligations(ctx context.Context, sessionID string) ([]Obligation, error) {
	var out []Obligation
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT "+ObligationColumnsAs("")+" FROM comms_obligations WHERE ?1 = '' OR session_id = ?1 ORDER BY obligation_id", func(stmt *sqlite.Stmt) error {
			out = append(out, ScanObligation(stmt, 0))
			return nil
		}, sessionID)
	})
	if err != nil {
		return nil, fmt.Errorf("journal obligations: %w", err)
	}
	return out, nil
}

// Signals returns the tagged signals of a session ("" = all), oldest first.
func (l *Ledger) Signals(ctx context.Context, sessionID string) ([]Signal, error) {
	var out []Signal
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT "+SignalColumnsAs("")+` FROM comms_signals WHERE ?1 = '' OR session_id = ?1 ORDER BY signal_id`, func(stmt *sqlite.Stmt) error {
			out = append(out, ScanSignal(stmt, 0))
			return nil
		}, sessionID)
	})
	if err != nil {
		return nil, fmt.Errorf("journal signals: %w", err)
	}
	return out, nil
}

// Events returns the event rows of one message, oldest first (Row is left
// empty; Get returns the current row).
func (l *Ledger) Events(ctx context.Context, messageID string) ([]Event, error) {
	var out []Event
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT event_id, message_id, event, at_ms, detail_json FROM comms_events WHERE message_id = ? ORDER BY event_id", func(stmt *sqlite.Stmt) error {
			out = append(out, Event{
				EventID:   stmt.ColumnInt64(0),
				MessageID: stmt.ColumnText(1),
				Event:     status.Event(stmt.ColumnText(2)),
				AtMs:      stmt.ColumnInt64(3),
				Detail:    []byte(stmt.ColumnText(4)),
			})
			return nil
		}, messageID)
	})
	if err != nil {
		return nil, fmt.Errorf("journal events: %w", err)
	}
	return out, nil
}

// KVGet reads a small stored value; ok is false when the key is absent.
func (l *Ledger) KVGet(ctx context.Context, key string) (value string, ok bool, err error) {
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT value FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
			value, ok = stmt.ColumnText(0), true
			return nil
		}, key)
	})
	if err != nil {
		return "", false, fmt.Errorf("journal kv get %q: %w", key, err)
	}
	return value, ok, nil
}
