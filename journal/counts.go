package journal

import (
	"fmt"
	"slices"
)

// Running per-session counts (comms_session_counts, schema version 3). The
// writer updates them in the same transaction as the comms_journal change
// they describe: appendMessage adds the new row to its group, advance moves
// a row whose status changed from its old group to its new one. The changes
// of a transaction are summed per group as its ops run and written once per
// group before it commits (flushCounts), not once per row. Verify recounts
// them from the rows.

const (
	countAdd = `INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq) VALUES (?, ?, ?, ?, ?, ?)
 ON CONFLICT(session_id, status, channel, sender_role) DO UPDATE SET n = n + excluded.n, max_seq = max(max_seq, excluded.max_seq)`
	countSub = `UPDATE comms_session_counts SET n = n + ? WHERE session_id = ? AND status = ? AND channel = ? AND sender_role = ?`
)

// countDelta is what a transaction changes in one group: n added (negative
// when more left than came) and, when anything came, the highest seq.
type countDelta struct {
	n      int64
	added  bool
	maxSeq int64
}

// countSeq is the seq a group's max_seq records for m: seq, never below 0.
func countSeq(m Message) int64 { return max(m.Seq, 0) }

// groupOf is the group m counts in.
func groupOf(m *Message) countKey {
	return countKey{session: m.SessionID, status: string(m.Status), channel: m.Channel, sender: m.SenderRole}
}

func (tx *txn) countDelta(m Message) *countDelta {
	k := groupOf(&m)
	d := tx.counts[k]
	if d == nil {
		if tx.counts == nil {
			tx.counts = make(map[countKey]*countDelta)
		}
		d = &countDelta{}
		tx.counts[k] = d
	}
	return d
}

// countAdded records m, just inserted, in its group.
func (tx *txn) countAdded(m Message) {
	d := tx.countDelta(m)
	d.n++
	d.maxSeq = max(d.maxSeq, countSeq(m))
	d.added = true
}

// countMoved moves a message from its group under cur to the one under
// next (only the status differs).
func (tx *txn) countMoved(cur, next Message) {
	if cur.Status == next.Status {
		return
	}
	tx.countDelta(cur).n--
	tx.countAdded(next)
}

// flushCounts writes the transaction's summed count changes, one statement
// per group, in a fixed order. A group whose count did not change is
// written only for its max_seq, when a message the transaction moved into
// it is still there: one that passed through (routed, on its way to acked
// in the transaction that also appends the next message) is counted, seq
// and all, in the group it ended in (#36: a statement fewer per serial
// append).
func (tx *txn) flushCounts() error {
	keys := make([]countKey, 0, len(tx.counts))
	for k := range tx.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareCountKeys)
	var held map[countKey]bool // the groups this transaction's rows end in
	for _, k := range keys {
		d := tx.counts[k]
		if d.added && d.n == 0 {
			if held == nil {
				held = tx.heldGroups()
			}
			d.added = held[k]
		}
		var err error
		switch {
		case d.added:
			err = tx.addCount(k, d)
		case d.n != 0:
			err = tx.exec(countSub, d.n, k.session, k.status, k.channel, k.sender)
		}
		if err != nil {
			return fmt.Errorf("session counts: %w", err)
		}
	}
	tx.counts = nil
	return nil
}

// heldGroups is the set of groups the rows this transaction holds are in.
func (tx *txn) heldGroups() map[countKey]bool {
	held := make(map[countKey]bool)
	for r := range tx.rows.all {
		held[groupOf(&r.m)] = true
	}
	return held
}

// addCount adds d to group k (creating its row).
func (tx *txn) addCount(k countKey, d *countDelta) error {
	s, err := tx.hot.get(tx.conn, stmtCountAdd)
	if err != nil {
		return err
	}
	bindTexts(s, 1, k.session, k.status, k.channel, k.sender)
	s.BindInt64(5, d.n)
	s.BindInt64(6, d.maxSeq)
	return stepOnce(s)
}
