package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hm/internal/ground/status"

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
	m.Signals = slices.Clone(m.Signals) // normalised below: never the caller's backing array
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
	tx.keepRow(m, false)
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
	tx.dropRow(id)
	return true, nil
}

// insertMessage runs the INSERT of a prepared message.
func (tx *txn) insertMessage(m Message) error {
	stmt, err := tx.hot.get(tx.conn, stmtInsertMessage)
	if err != nil {
		return err
	}
	bindTexts(stmt, 1, m.MessageID, m.SessionID, m.SenderRole, m.TargetRole, m.Channel, m.Direction)
	nullableInt(stmt, 7, m.Seq)
	stmt.BindText(8, m.Header)
	stmt.BindText(9, m.Priority)
	nullableInt(stmt, 10, m.SentAtMs)
	stmt.BindInt64(11, m.BrokeredAtMs)
	stmt.BindText(12, m.RawBody)
	stmt.BindText(13, m.BodyHash)
	stmt.BindInt64(14, m.BodyBytes)
	stmt.BindText(15, m.MetadataJSON)
	bindState(stmt, 16, &m)
	return stepOnce(stmt)
}

// afterInsert writes the event and side rows of an inserted message.
func (tx *txn) afterInsert(m Message) (Message, error) {
	tx.maxRowID = max(tx.maxRowID, m.RowID)
	tx.countAdded(m)
	// The brokered event covers the row and every side row written for it,
	// so they are written first; the obligations it closes get their own
	// events after it.
	ch := change{row: &m, static: tx.static(&m)}
	ref := m.Ref()
	if len(m.Signals) > 0 {
		ch.signals = make([]Signal, 0, len(m.Signals))
	}
	for _, s := range m.Signals {
		text := strings.TrimSpace(s.Text)
		if err := tx.exec("INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES (?,?,?,?,?,?,?)",
			m.MessageID, m.SessionID, m.SenderRole, ref, s.Kind, text, m.BrokeredAtMs); err != nil {
			return Message{}, fmt.Errorf("insert signal: %w", err)
		}
		ch.signals = append(ch.signals, Signal{SignalID: tx.conn.LastInsertRowID(), SessionID: m.SessionID, SenderRole: m.SenderRole,
			Ref: ref, Kind: s.Kind, Text: text, AtMs: m.BrokeredAtMs})
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
		ch.obligation = &Obligation{ObligationID: tx.conn.LastInsertRowID(), SessionID: m.SessionID, OwnerRole: o.OwnerRole,
			RequesterRole: requester, Ref: oref, OpenedAtMs: m.BrokeredAtMs}
	}
	closed, err := tx.applyRefs(m, &ch)
	if err != nil {
		return Message{}, err
	}
	if err := tx.addEvent(m.MessageID, status.EventBrokered, m.UpdatedAtMs, brokeredDetail(m), &ch); err != nil {
		return Message{}, err
	}
	for _, c := range closed {
		row, _, err := tx.get(c.id)
		if err != nil {
			return Message{}, err
		}
		detail, err := stateDetail(map[string]any{"closed_by": m.MessageID, "ref": c.ref}, row)
		if err != nil {
			return Message{}, err
		}
		if err := tx.addEvent(c.id, status.EventObligationClosed, m.BrokeredAtMs, detail,
			&change{row: &row, closed: &Obligation{ClosedBy: m.MessageID, ClosedAtMs: m.BrokeredAtMs}}); err != nil {
			return Message{}, err
		}
	}
	return m.row(), nil
}

// closedObligation is an obligation applyRefs closed: its message and ref.
type closedObligation struct{ id, ref string }

// applyRefs closes obligations owned by the sender and resolves TASK and
// BLOCKER signals that m references, within m's session. The resolved
// signal ids go to ch; the closed obligations are returned for their
// events.
func (tx *txn) applyRefs(m Message, ch *change) ([]closedObligation, error) {
	if len(m.Refs) == 0 {
		return nil, nil
	}
	var closed []closedObligation
	seen := make(map[string]bool, len(m.Refs))
	for _, r := range m.Refs {
		ref := NormalizeRef(r)
		if ref == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		err := tx.query(`UPDATE comms_obligations SET closed_by = ?, closed_at_ms = ?
 WHERE session_id = ? AND owner_role = ? COLLATE NOCASE AND ref = ? AND closed_by IS NULL AND message_id <> ?
 RETURNING message_id`, func(stmt *sqlite.Stmt) error {
			closed = append(closed, closedObligation{id: stmt.ColumnText(0), ref: ref})
			return nil
		}, m.MessageID, m.BrokeredAtMs, m.SessionID, m.SenderRole, ref, m.MessageID)
		if err != nil {
			return nil, fmt.Errorf("close obligations: %w", err)
		}
		err = tx.query(`UPDATE comms_signals SET resolved_by = ?
 WHERE session_id = ? AND ref = ? AND kind IN ('TASK','BLOCKER') AND resolved_by IS NULL AND message_id <> ?
 RETURNING signal_id`, func(stmt *sqlite.Stmt) error {
			ch.resolved = append(ch.resolved, stmt.ColumnInt64(0))
			return nil
		}, m.MessageID, m.SessionID, ref, m.MessageID)
		if err != nil {
			return nil, fmt.Errorf("resolve signals: %w", err)
		}
	}
	slices.Sort(ch.resolved)
	return closed, nil
}

// Every event's detail_json records the message row's changeable columns
// as they stand after the event, so Verify can rebuild the row each event
// covers and compare the last one with the table.
const (
	detailStatus      = "status"
	detailAckStatus   = "ack_status"
	detailErrorCode   = "error_code"
	detailAttempt     = "attempt"
	detailUpdatedAtMs = "updated_at_ms"
	// detailRemindedAtMs is the reminder time of obligation_reminded.
	detailRemindedAtMs = "reminded_at_ms"
)

// appendRowHead opens a key-sorted JSON object of a message row with the
// keys that sort first (ack_status, attempt, body_bytes, body_hash): the
// start of both the brokered event's detail and the keyed chain's canonical
// row.
func appendRowHead(b []byte, m *Message) []byte {
	b = append(b, `{"ack_status":`...)
	b = appendJSONString(b, string(m.AckStatus))
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, m.Attempt, 10)
	b = append(b, `,"body_bytes":`...)
	b = strconv.AppendInt(b, m.BodyBytes, 10)
	b = append(b, `,"body_hash":`...)
	b = appendJSONString(b, m.BodyHash)
	return b
}

// brokeredDetail is the detail of a message's first event, keys sorted.
func brokeredDetail(m Message) string {
	b := make([]byte, 0, 200)
	b = appendRowHead(b, &m)
	b = append(b, `,"error_code":`...)
	b = appendJSONString(b, string(m.ErrorCode))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(m.Status))
	b = append(b, `,"updated_at_ms":`...)
	b = strconv.AppendInt(b, m.UpdatedAtMs, 10)
	return string(append(b, '}'))
}

// stateDetail encodes detail with row's changeable columns added (they
// replace any keys of the same names), keys sorted as encoding/json sorts
// a map's.
func stateDetail(detail map[string]any, row Message) (string, error) {
	d, err := encodeDetail(detail)
	if err != nil {
		return "", err
	}
	return string(d.appendWithState(make([]byte, 0, len(d.fields)+len(d.keys)+112), row)), nil
}

// eventDetail is an event detail's own keys (all but the row's state
// columns, which appendWithState adds), sorted and encoded. A change's detail is
// encoded when the change is queued, on its caller's goroutine; the writer
// only adds the state the change leaves the row in.
type eventDetail struct {
	fields []byte   // "key":value pairs, in key order, without separators
	keys   []string // the keys, sorted
	ends   []int    // where each key's pair ends in fields
}

// encodeDetail encodes detail's keys but the state columns. Strings,
// bools and integers are written directly (every hot-path detail holds
// only those); other values go through encoding/json.
func encodeDetail(detail map[string]any) (eventDetail, error) {
	var d eventDetail
	if len(detail) == 0 {
		return d, nil
	}
	d.keys = make([]string, 0, len(detail))
	for k := range detail {
		if !slices.Contains(stateKeys, k) {
			d.keys = append(d.keys, k)
		}
	}
	slices.Sort(d.keys)
	d.ends = make([]int, len(d.keys))
	b := make([]byte, 0, 24*len(d.keys))
	for i, k := range d.keys {
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, detail[k]); err != nil {
			return eventDetail{}, fmt.Errorf("%w: detail %q: %w", ErrInvalid, k, err)
		}
		d.ends[i] = len(b)
	}
	d.fields = b
	return d, nil
}

// appendWithState appends the detail JSON of d with row's state columns,
// keys sorted.
func (d eventDetail) appendWithState(b []byte, row Message) []byte {
	b = append(b, '{')
	open := len(b)
	start, i, j := 0, 0, 0
	for i < len(d.keys) || j < len(stateKeys) {
		if len(b) > open {
			b = append(b, ',')
		}
		if j == len(stateKeys) || i < len(d.keys) && d.keys[i] < stateKeys[j] {
			b = append(b, d.fields[start:d.ends[i]]...)
			start = d.ends[i]
			i++
			continue
		}
		k := stateKeys[j]
		j++
		b = appendJSONString(b, k)
		b = append(b, ':')
		switch k {
		case detailStatus:
			b = appendJSONString(b, string(row.Status))
		case detailAckStatus:
			b = appendJSONString(b, string(row.AckStatus))
		case detailErrorCode:
			b = appendJSONString(b, string(row.ErrorCode))
		case detailAttempt:
			b = strconv.AppendInt(b, row.Attempt, 10)
		case detailUpdatedAtMs:
			b = strconv.AppendInt(b, row.UpdatedAtMs, 10)
		}
	}
	return append(b, '}')
}

// stateKeys are the detail keys appendWithState takes from the row, sorted.
var stateKeys = []string{detailAckStatus, detailAttempt, detailErrorCode, detailStatus, detailUpdatedAtMs}

// appendJSONValue appends v as JSON.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case nil:
		return append(b, "null"...), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}
