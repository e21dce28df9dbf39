package journal

import (
	"context"
	"fmt"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
)

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
// logged. c.Detail is encoded before AdvanceAsync returns.
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

// AdvanceThen queues c like AdvanceAsync, without waiting for the commit,
// and calls then once the writer is done with it: nil after the commit,
// the error otherwise (ErrNotFound for an unknown id, the error check
// returned). check, when set, sees the row as it is in the transaction
// before c applies, and refuses the change by returning an error (nothing
// is written). then and check run on the writer's goroutine: they must be
// quick and must not call the ledger. It reports false, without calling
// then, when the change could not be queued (the ledger is closing).
func (l *Ledger) AdvanceThen(c Change, check func(Message) error, then func(error)) bool {
	if c.MessageID == "" {
		l.log.Error("journal: advance without message_id dropped")
		return false
	}
	o := l.advanceOp(c, nil)
	if check != nil {
		apply := o.apply
		o.apply = func(tx *txn) error {
			cur, found, err := tx.get(c.MessageID)
			switch {
			case err != nil:
				return err
			case !found:
				return logical(fmt.Errorf("advance %s: %w", c.MessageID, ErrNotFound))
			}
			if err := check(cur); err != nil {
				return logical(err)
			}
			return apply(tx)
		}
	}
	o.then = then
	if err := l.submit(context.Background(), o); err != nil {
		l.log.Warn("journal: advance not queued", "message_id", c.MessageID, "err", err)
		return false
	}
	return true
}

func (l *Ledger) advanceOp(c Change, out *Message) *op {
	d, derr := encodeDetail(c.Detail) // here, off the writer's goroutine
	c.Detail = nil
	return &op{kind: opTx, name: "advance", apply: func(tx *txn) error {
		r, err := tx.advance(c, d, derr)
		if out != nil {
			*out = r
		}
		return err
	}}
}

// advance applies c, whose detail was encoded into d (or failed to be,
// derr: refused if the change writes an event).
func (tx *txn) advance(c Change, d eventDetail, derr error) (Message, error) {
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
	if derr != nil {
		return Message{}, logical(fmt.Errorf("advance %s: %w", c.MessageID, derr))
	}
	tx.scratch = d.appendWithState(tx.scratch[:0], next)
	dj := string(tx.scratch)
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
		tx.setRow(next)
		tx.countMoved(cur, next)
	}
	if err := tx.addEvent(c.MessageID, name, c.AtMs, dj, &change{row: &next, static: tx.static(&next)}); err != nil {
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
		detail, err := stateDetail(map[string]any{detailRemindedAtMs: tx.nowMs}, row)
		if err != nil {
			return err
		}
		return tx.addEvent(messageID, status.EventObligationReminded, tx.nowMs, detail, &change{row: &row})
	}})
}

func (tx *txn) exec(query string, args ...any) error {
	return execArgs(tx.conn, query, nil, args...)
}

func (tx *txn) query(query string, fn func(*sqlite.Stmt) error, args ...any) error {
	return execArgs(tx.conn, query, fn, args...)
}
