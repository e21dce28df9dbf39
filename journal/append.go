package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"hm/internal/status"

	"zombiezen.com/go/sqlite"
)

// Append commits one message and returns the committed row. It fills
// BodyHash (sha256 hex of RawBody), BodyBytes, Status ("brokered" when
// empty), Direction ("outbound"), Priority ("normal"), MetadataJSON ("{}"),
// UpdatedAtMs and BrokeredAtMs (now, when 0), and writes a "brokered" event
// whose detail_json records the body hash. Signals, Obligation and Refs are
// processed in the same transaction (see Message). m is not modified.
//
// If message_id is already present nothing is written and the existing row
// is returned with ErrDuplicate. If the ledger cannot commit the error wraps
// ErrUnavailable. Append returns after the commit (group commit: concurrent
// Appends share transactions).
func (l *Ledger) Append(ctx context.Context, m *Message) (Message, error) {
	if m == nil {
		return Message{}, fmt.Errorf("journal append: %w: nil message", ErrInvalid)
	}
	msg := *m
	if err := l.prepareMessage(&msg); err != nil {
		return Message{}, err
	}
	var out Message
	finished, err := l.do(ctx, &op{kind: opTx, name: "append", apply: func(tx *txn) error {
		r, err := tx.appendMessage(msg)
		out = r
		return err
	}})
	if !finished {
		return Message{}, err
	}
	return out, err
}

// AppendQueued queues m for commit and returns at once with a function that
// waits for the outcome (the same results as Append). Calls from one
// goroutine commit in call order, so a caller holding its own lock across
// AppendQueued gets commit order equal to its lock order while the waits
// overlap (pipelining). The wait function must be called exactly once.
func (l *Ledger) AppendQueued(ctx context.Context, m *Message) (func(ctx context.Context) (Message, error), error) {
	if m == nil {
		return nil, fmt.Errorf("journal append: %w: nil message", ErrInvalid)
	}
	msg := *m
	if err := l.prepareMessage(&msg); err != nil {
		return nil, err
	}
	var out Message
	o := &op{kind: opTx, name: "append", done: make(chan error, 1), apply: func(tx *txn) error {
		r, err := tx.appendMessage(msg)
		out = r
		return err
	}}
	if err := l.submit(ctx, o); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (Message, error) {
		select {
		case err := <-o.done:
			return out, err
		case <-ctx.Done():
			return Message{}, fmt.Errorf("journal append: %w (the write may still commit)", ctx.Err())
		}
	}, nil
}

// AppendBatch commits all messages in one transaction (bulk loading). Each
// *Message is updated in place with its committed row (RowID, BodyHash,
// defaults). Any duplicate or invalid message fails the whole batch and
// nothing is written.
func (l *Ledger) AppendBatch(ctx context.Context, ms []*Message) error {
	if len(ms) == 0 {
		return nil
	}
	prepared := make([]Message, len(ms))
	for i, m := range ms {
		if m == nil {
			return fmt.Errorf("journal append batch: item %d: %w: nil message", i, ErrInvalid)
		}
		prepared[i] = *m
		if err := l.prepareMessage(&prepared[i]); err != nil {
			return fmt.Errorf("journal append batch: item %d: %w", i, err)
		}
	}
	out := make([]Message, len(ms))
	finished, err := l.do(ctx, &op{kind: opSolo, name: "append batch", apply: func(tx *txn) error {
		for i, m := range prepared {
			r, err := tx.appendMessage(m)
			if err != nil {
				if le, ok := err.(logicalError); ok {
					return logical(fmt.Errorf("item %d: %w", i, le.err))
				}
				return err
			}
			out[i] = r
		}
		return nil
	}})
	if err != nil || !finished {
		return err
	}
	for i, m := range ms {
		r := out[i]
		r.Signals, r.Obligation, r.Refs = m.Signals, m.Obligation, m.Refs
		*m = r
	}
	return nil
}

// prepareMessage validates m and fills defaults; it runs on the caller's
// goroutine so hashing stays off the writer.
func (l *Ledger) prepareMessage(m *Message) error {
	if m.MessageID == "" {
		return fmt.Errorf("journal append: %w: empty message_id", ErrInvalid)
	}
	if m.Status == "" {
		m.Status = status.Brokered
	}
	if m.Status.Rank() < 0 {
		return fmt.Errorf("journal append %s: %w: unknown status %q", m.MessageID, ErrInvalid, m.Status)
	}
	if m.AckStatus.Rank() < 0 {
		return fmt.Errorf("journal append %s: %w: unknown ack status %q", m.MessageID, ErrInvalid, m.AckStatus)
	}
	if m.MetadataJSON == "" {
		m.MetadataJSON = "{}"
	} else if !json.Valid([]byte(m.MetadataJSON)) {
		return fmt.Errorf("journal append %s: %w: metadata_json is not JSON", m.MessageID, ErrInvalid)
	}
	if m.Direction == "" {
		m.Direction = DirectionOutbound
	}
	if m.Priority == "" {
		m.Priority = "normal"
	}
	sum := sha256.Sum256([]byte(m.RawBody))
	m.BodyHash = hex.EncodeToString(sum[:])
	m.BodyBytes = int64(len(m.RawBody))
	now := l.now().UnixMilli()
	if m.UpdatedAtMs == 0 {
		m.UpdatedAtMs = now
	}
	if m.BrokeredAtMs == 0 {
		m.BrokeredAtMs = m.UpdatedAtMs
	}
	m.RowID = 0
	for i := range m.Signals {
		s := &m.Signals[i]
		s.Kind = strings.ToUpper(strings.TrimSpace(s.Kind))
		if s.Kind == "" {
			return fmt.Errorf("journal append %s: %w: signal without kind", m.MessageID, ErrInvalid)
		}
	}
	return nil
}

func nullableInt(stmt *sqlite.Stmt, param int, v int64) {
	if v == 0 {
		stmt.BindNull(param)
		return
	}
	stmt.BindInt64(param, v)
}

// appendMessage inserts a prepared message with its event and side rows.
// Logical failures (duplicate) happen before any write.
func (tx *txn) appendMessage(m Message) (Message, error) {
	err := tx.insertMessage(m)
	if err != nil && sqlite.ErrCode(err) == sqlite.ResultConstraintUnique {
		// A row hm never wrote (SquidRun's hm-send.js records the message
		// before sending it) is replaced by the hub's.
		adopted, aerr := tx.replaceForeignRecord(m.MessageID)
		if aerr != nil {
			return Message{}, aerr
		}
		if adopted {
			err = tx.insertMessage(m)
		}
	}
	if err != nil {
		// A duplicate id fails the INSERT alone (the statement is rolled
		// back, the transaction goes on): nothing was written for it.
		if sqlite.ErrCode(err) == sqlite.ResultConstraintUnique {
			existing, found, gerr := tx.get(m.MessageID)
			if gerr != nil {
				return Message{}, gerr
			}
			if found {
				return existing, logical(fmt.Errorf("append %s: %w", m.MessageID, ErrDuplicate))
			}
		}
		return Message{}, fmt.Errorf("insert message %s: %w", m.MessageID, err)
	}
	m.RowID = tx.conn.LastInsertRowID()
	return tx.afterInsert(m)
}

// replaceForeignRecord deletes the row of id if another program wrote it:
// status "recorded" and no event in comms_events (hm writes an event in the
// transaction of every row it inserts). SquidRun's hm-send.js records each
// message that way before sending it to the hub; the hub's row replaces it.
func (tx *txn) replaceForeignRecord(id string) (bool, error) {
	var rowID int64
	var body string
	found := false
	if err := tx.query(`SELECT row_id, raw_body FROM comms_journal WHERE message_id = ? AND status = ?
 AND NOT EXISTS (SELECT 1 FROM comms_events WHERE message_id = comms_journal.message_id)`, func(stmt *sqlite.Stmt) error {
		rowID, body, found = stmt.ColumnInt64(0), stmt.ColumnText(1), true
		return nil
	}, id, string(status.Recorded)); err != nil {
		return false, fmt.Errorf("look up foreign record %s: %w", id, err)
	}
	if !found {
		return false, nil
	}
	indexed := int64(0)
	if err := tx.query("SELECT CAST(value AS INTEGER) FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
		indexed = stmt.ColumnInt64(0)
		return nil
	}, kvFTSLastRowID); err != nil {
		return false, fmt.Errorf("fts state: %w", err)
	}
	if rowID <= indexed {
		if err := tx.exec("INSERT INTO comms_fts(comms_fts, rowid, raw_body) VALUES('delete', ?, ?)", rowID, body); err != nil {
			return false, fmt.Errorf("unindex foreign record %s: %w", id, err)
		}
	}
	if err := tx.exec("DELETE FROM comms_journal WHERE row_id = ?", rowID); err != nil {
		return false, fmt.Errorf("replace foreign record %s: %w", id, err)
	}
	return true, nil
}

// insertMessage runs the INSERT of a prepared message.
func (tx *txn) insertMessage(m Message) error {
	stmt, err := tx.conn.Prepare(`INSERT INTO comms_journal(message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	stmt.BindText(1, m.MessageID)
	stmt.BindText(2, m.SessionID)
	stmt.BindText(3, m.SenderRole)
	stmt.BindText(4, m.TargetRole)
	stmt.BindText(5, m.Channel)
	stmt.BindText(6, m.Direction)
	nullableInt(stmt, 7, m.Seq)
	stmt.BindText(8, m.Header)
	stmt.BindText(9, m.Priority)
	nullableInt(stmt, 10, m.SentAtMs)
	stmt.BindInt64(11, m.BrokeredAtMs)
	stmt.BindText(12, m.RawBody)
	stmt.BindText(13, m.BodyHash)
	stmt.BindInt64(14, m.BodyBytes)
	stmt.BindText(15, string(m.Status))
	stmt.BindText(16, string(m.AckStatus))
	stmt.BindText(17, string(m.ErrorCode))
	stmt.BindInt64(18, m.Attempt)
	stmt.BindText(19, m.MetadataJSON)
	stmt.BindInt64(20, m.UpdatedAtMs)
	_, err = stmt.Step()
	if rerr := stmt.Reset(); err == nil {
		err = rerr
	}
	return err
}

// afterInsert writes the event and side rows of an inserted message.
func (tx *txn) afterInsert(m Message) (Message, error) {
	tx.maxRowID = max(tx.maxRowID, m.RowID)
	if err := tx.countAdded(m); err != nil {
		return Message{}, err
	}

	detail := brokeredDetail(m)
	if err := tx.addEvent(m.MessageID, status.EventBrokered, m.UpdatedAtMs, detail, m); err != nil {
		return Message{}, err
	}
	ref := m.Ref()
	for _, s := range m.Signals {
		if err := tx.exec("INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES (?,?,?,?,?,?,?)",
			m.MessageID, m.SessionID, m.SenderRole, ref, s.Kind, strings.TrimSpace(s.Text), m.BrokeredAtMs); err != nil {
			return Message{}, fmt.Errorf("insert signal: %w", err)
		}
	}
	if o := m.Obligation; o != nil {
		oref := ref
		if o.Ref != "" {
			oref = NormalizeRef(o.Ref)
		}
		requester := o.RequesterRole
		if requester == "" {
			requester = m.SenderRole
		}
		if err := tx.exec("INSERT INTO comms_obligations(message_id, session_id, owner_role, requester_role, ref, opened_at_ms) VALUES (?,?,?,?,?,?)",
			m.MessageID, m.SessionID, o.OwnerRole, requester, oref, m.BrokeredAtMs); err != nil {
			return Message{}, fmt.Errorf("insert obligation: %w", err)
		}
	}
	if err := tx.applyRefs(m); err != nil {
		return Message{}, err
	}
	return m.row(), nil
}

// applyRefs closes obligations owned by the sender and resolves TASK and
// BLOCKER signals that m references, within m's session.
func (tx *txn) applyRefs(m Message) error {
	seen := make(map[string]bool, len(m.Refs))
	for _, r := range m.Refs {
		ref := NormalizeRef(r)
		if ref == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		var closed []string
		err := tx.query(`UPDATE comms_obligations SET closed_by = ?, closed_at_ms = ?
 WHERE session_id = ? AND owner_role = ? COLLATE NOCASE AND ref = ? AND closed_by IS NULL AND message_id <> ?
 RETURNING message_id`, func(stmt *sqlite.Stmt) error {
			closed = append(closed, stmt.ColumnText(0))
			return nil
		}, m.MessageID, m.BrokeredAtMs, m.SessionID, m.SenderRole, ref, m.MessageID)
		if err != nil {
			return fmt.Errorf("close obligations: %w", err)
		}
		for _, id := range closed {
			row, _, err := tx.get(id)
			if err != nil {
				return err
			}
			detail := `{"closed_by":` + string(appendJSONString(nil, m.MessageID)) + `,"ref":` + string(appendJSONString(nil, ref)) + `}`
			if err := tx.addEvent(id, status.EventObligationClosed, m.BrokeredAtMs, detail, row); err != nil {
				return err
			}
		}
		if err := tx.exec(`UPDATE comms_signals SET resolved_by = ?
 WHERE session_id = ? AND ref = ? AND kind IN ('TASK','BLOCKER') AND resolved_by IS NULL AND message_id <> ?`,
			m.MessageID, m.SessionID, ref, m.MessageID); err != nil {
			return fmt.Errorf("resolve signals: %w", err)
		}
	}
	return nil
}

func brokeredDetail(m Message) string {
	b := make([]byte, 0, 160)
	b = append(b, '{')
	if m.AckStatus != "" {
		b = append(b, `"ack_status":`...)
		b = appendJSONString(b, string(m.AckStatus))
		b = append(b, ',')
	}
	b = append(b, `"body_bytes":`...)
	b = strconv.AppendInt(b, m.BodyBytes, 10)
	b = append(b, `,"body_hash":`...)
	b = appendJSONString(b, m.BodyHash)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(m.Status))
	return string(append(b, '}'))
}

// Advance applies c to its message monotonically (see Merge) and waits for
// the commit. An event row is written only when the row changed, or when
// c.Event is set. It returns the row after the change; ErrNotFound if the
// message is unknown.
func (l *Ledger) Advance(ctx context.Context, c Change) (Message, error) {
	if c.MessageID == "" {
		return Message{}, fmt.Errorf("journal advance: %w: empty message_id", ErrInvalid)
	}
	var out Message
	finished, err := l.do(ctx, l.advanceOp(c, &out))
	if !finished {
		return Message{}, err
	}
	return out, err
}

// AdvanceAsync queues c behind every write submitted before it and returns
// without waiting (it blocks only while the queue is full). Failures are
// logged. c.Detail is copied shallowly; do not mutate nested values.
func (l *Ledger) AdvanceAsync(c Change) {
	if c.MessageID == "" {
		l.log.Error("journal: advance without message_id dropped")
		return
	}
	o := l.advanceOp(c, nil)
	o.retry = true
	if err := l.submit(context.Background(), o); err != nil {
		l.log.Error("journal: async advance dropped", "message_id", c.MessageID, "err", err)
	}
}

func (l *Ledger) advanceOp(c Change, out *Message) *op {
	c.Detail = maps.Clone(c.Detail)
	return &op{kind: opTx, name: "advance", apply: func(tx *txn) error {
		r, err := tx.advance(c)
		if out != nil {
			*out = r
		}
		return err
	}}
}

func (tx *txn) advance(c Change) (Message, error) {
	cur, found, err := tx.get(c.MessageID)
	if err != nil {
		return Message{}, err
	}
	if !found {
		return Message{}, logical(fmt.Errorf("advance %s: %w", c.MessageID, ErrNotFound))
	}
	if c.AtMs == 0 {
		c.AtMs = tx.nowMs
	}
	next, changed := Merge(cur, c)
	if !changed && c.Event == "" {
		return cur, nil
	}
	detail := make(map[string]any, len(c.Detail)+4)
	maps.Copy(detail, c.Detail)
	detail["status"] = next.Status
	detail["ack_status"] = next.AckStatus
	if next.Status != cur.Status && next.Status == status.Failed && next.ErrorCode != "" {
		detail["error_code"] = next.ErrorCode
	}
	if c.IncAttempt {
		detail["attempt"] = next.Attempt
	}
	dj, err := json.Marshal(detail)
	if err != nil {
		return Message{}, logical(fmt.Errorf("advance %s: %w: detail: %w", c.MessageID, ErrInvalid, err))
	}
	name := c.Event
	switch {
	case name != "":
	case next.Status != cur.Status:
		name = status.Event(next.Status)
	case next.AckStatus != cur.AckStatus:
		name = status.Event(next.AckStatus)
	default:
		name = status.EventAttempt
	}
	if changed {
		if err := tx.exec("UPDATE comms_journal SET status = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE row_id = ?",
			next.Status, next.AckStatus, next.ErrorCode, next.Attempt, next.UpdatedAtMs, next.RowID); err != nil {
			return Message{}, fmt.Errorf("update message %s: %w", c.MessageID, err)
		}
		if err := tx.countMoved(cur, next); err != nil {
			return Message{}, err
		}
	}
	if err := tx.addEvent(c.MessageID, name, c.AtMs, string(dj), next); err != nil {
		return Message{}, err
	}
	return next, nil
}

// MarkReminded records that the open obligation of messageID got its
// reminder (and writes an obligation_reminded event). ErrNotFound when the
// message has no open obligation.
func (l *Ledger) MarkReminded(ctx context.Context, messageID string) error {
	return l.run(ctx, &op{kind: opTx, name: "mark reminded", apply: func(tx *txn) error {
		if err := tx.exec("UPDATE comms_obligations SET reminded_at_ms = ? WHERE message_id = ? AND closed_by IS NULL", tx.nowMs, messageID); err != nil {
			return fmt.Errorf("mark reminded %s: %w", messageID, err)
		}
		if tx.conn.Changes() == 0 {
			return logical(fmt.Errorf("mark reminded %s: %w", messageID, ErrNotFound))
		}
		row, _, err := tx.get(messageID)
		if err != nil {
			return err
		}
		return tx.addEvent(messageID, status.EventObligationReminded, tx.nowMs, `{"reminded_at_ms":`+strconv.FormatInt(tx.nowMs, 10)+`}`, row)
	}})
}

// get loads a message by id on the writer connection.
func (tx *txn) get(messageID string) (Message, bool, error) {
	return getMessage(tx.conn, messageID)
}

func (tx *txn) exec(query string, args ...any) error {
	return execArgs(tx.conn, query, nil, args...)
}

func (tx *txn) query(query string, fn func(*sqlite.Stmt) error, args ...any) error {
	return execArgs(tx.conn, query, fn, args...)
}
