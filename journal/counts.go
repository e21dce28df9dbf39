package journal

import "fmt"

// Running per-session counts (comms_session_counts, schema version 3). The
// writer updates them in the same transaction as the comms_journal change
// they describe: appendMessage adds the new row to its group, advance moves
// a row whose status changed from its old group to its new one. Verify
// recounts them from the rows.

const (
	countAdd = `INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq) VALUES (?, ?, ?, ?, 1, ?)
 ON CONFLICT(session_id, status, channel, sender_role) DO UPDATE SET n = n + 1, max_seq = max(max_seq, excluded.max_seq)`
	countSub = `UPDATE comms_session_counts SET n = n - 1 WHERE session_id = ? AND status = ? AND channel = ? AND sender_role = ?`
)

// countSeq is the seq a group's max_seq records for m: seq, never below 0
// (NULL is stored for 0).
func countSeq(m Message) int64 { return max(m.Seq, 0) }

// countAdded records m, just inserted, in its group.
func (tx *txn) countAdded(m Message) error {
	if err := tx.exec(countAdd, m.SessionID, m.Status, m.Channel, m.SenderRole, countSeq(m)); err != nil {
		return fmt.Errorf("count message %s: %w", m.MessageID, err)
	}
	return nil
}

// countMoved moves a message from its group under cur to the one under
// next (only the status differs).
func (tx *txn) countMoved(cur, next Message) error {
	if cur.Status == next.Status {
		return nil
	}
	if err := tx.exec(countSub, cur.SessionID, cur.Status, cur.Channel, cur.SenderRole); err != nil {
		return fmt.Errorf("count message %s: %w", cur.MessageID, err)
	}
	return tx.countAdded(next)
}
