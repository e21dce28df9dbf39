package journal

import (
	"fmt"

	"zombiezen.com/go/sqlite"
)

// The statements the writer runs for every message, held by the writer:
// conn.Prepare finds a cached statement by hashing its whole text, then
// resets it and clears its bindings; these are reset after each run and
// have every parameter bound before the next, so neither is needed again.

type hotStmt int

const (
	stmtInsertMessage hotStmt = iota
	stmtInsertEvent
	stmtUpdateRow
	stmtCountAdd
	stmtBegin
	stmtCommit
	stmtDataVersion
	numHotStmts
)

var hotQueries = [numHotStmts]string{
	stmtInsertMessage: `INSERT INTO comms_journal(message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, metadata_json, status, ack_status, error_code, attempt, updated_at_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
	stmtInsertEvent: "INSERT INTO comms_events(event_id, message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
	stmtUpdateRow:   "UPDATE comms_journal SET status = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE row_id = ?",
	stmtCountAdd:    countAdd,
	stmtBegin:       "BEGIN IMMEDIATE",
	stmtCommit:      "COMMIT",
	stmtDataVersion: "PRAGMA data_version",
}

// hotStmts holds the statements of one connection: the writer's, until
// it is replaced (recover.go). They belong to the connection's cache,
// which finalizes them when it closes.
type hotStmts struct {
	conn  *sqlite.Conn
	stmts [numHotStmts]*sqlite.Stmt
}

// get returns statement k on conn, prepared once.
func (h *hotStmts) get(conn *sqlite.Conn, k hotStmt) (*sqlite.Stmt, error) {
	if h.conn != conn {
		*h = hotStmts{conn: conn}
	}
	if s := h.stmts[k]; s != nil {
		return s, nil
	}
	s, err := conn.Prepare(hotQueries[k])
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	h.stmts[k] = s
	return s, nil
}

// stepOnce runs s to its end and resets it.
func stepOnce(s *sqlite.Stmt) error {
	_, err := s.Step()
	if rerr := s.Reset(); err == nil {
		err = rerr
	}
	return err
}

// updateRowState writes m's state columns into its row.
func (tx *txn) updateRowState(m *Message) error {
	s, err := tx.hot.get(tx.conn, stmtUpdateRow)
	if err != nil {
		return err
	}
	bindState(s, 1, m)
	s.BindInt64(6, m.RowID)
	return stepOnce(s)
}

// bindState binds m's state columns (status, ack_status, error_code,
// attempt, updated_at_ms) to the five parameters from first on.
func bindState(s *sqlite.Stmt, first int, m *Message) {
	s.BindText(first, string(m.Status))
	s.BindText(first+1, string(m.AckStatus))
	s.BindText(first+2, string(m.ErrorCode))
	s.BindInt64(first+3, m.Attempt)
	s.BindInt64(first+4, m.UpdatedAtMs)
}

// bindTexts binds vals to the parameters from first on.
func bindTexts(s *sqlite.Stmt, first int, vals ...string) {
	for i, v := range vals {
		s.BindText(first+i, v)
	}
}

// run runs statement k, which takes no parameters, on conn.
func (h *hotStmts) run(conn *sqlite.Conn, k hotStmt) error {
	s, err := h.get(conn, k)
	if err != nil {
		return err
	}
	return stepOnce(s)
}
