package journal

import (
	"fmt"

	"zombiezen.com/go/sqlite"
)

// loadSide reads comms_signals and comms_obligations, which the briefing
// and handoff read: the chain covers them through the events of the
// messages that wrote them.
func (v *verifier) loadSide() error {
	v.signals = make(map[string][]Signal)
	v.resolved = make(map[string][]int64)
	v.obligations = make(map[string]*Obligation)
	err := execArgs(v.conn, "SELECT signal_id, message_id, session_id, sender_role, ref, kind, text, at_ms, coalesce(resolved_by, '') FROM comms_signals ORDER BY signal_id", func(stmt *sqlite.Stmt) error {
		s := Signal{SignalID: stmt.ColumnInt64(0), MessageID: stmt.ColumnText(1), SessionID: stmt.ColumnText(2), SenderRole: stmt.ColumnText(3),
			Ref: stmt.ColumnText(4), Kind: stmt.ColumnText(5), Text: stmt.ColumnText(6), AtMs: stmt.ColumnInt64(7), ResolvedBy: stmt.ColumnText(8)}
		v.signals[s.MessageID] = append(v.signals[s.MessageID], s)
		v.allSignals = append(v.allSignals, s)
		if stmt.ColumnType(8) != sqlite.TypeNull && s.ResolvedBy != "" {
			v.resolved[s.ResolvedBy] = append(v.resolved[s.ResolvedBy], s.SignalID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read signals: %w", err)
	}
	err = execArgs(v.conn, `SELECT obligation_id, message_id, session_id, owner_role, requester_role, ref, opened_at_ms,
 coalesce(reminded_at_ms, 0), coalesce(closed_by, ''), coalesce(closed_at_ms, 0) FROM comms_obligations ORDER BY obligation_id`, func(stmt *sqlite.Stmt) error {
		o := &Obligation{ObligationID: stmt.ColumnInt64(0), MessageID: stmt.ColumnText(1), SessionID: stmt.ColumnText(2), OwnerRole: stmt.ColumnText(3),
			RequesterRole: stmt.ColumnText(4), Ref: stmt.ColumnText(5), OpenedAtMs: stmt.ColumnInt64(6), RemindedAtMs: stmt.ColumnInt64(7),
			ClosedBy: stmt.ColumnText(8), ClosedAtMs: stmt.ColumnInt64(9)}
		v.obligations[o.MessageID] = o
		v.allObl = append(v.allObl, o)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read obligations: %w", err)
	}
	return nil
}

// sideRows checks that every signal and obligation is accounted for by a
// chained event: its message's, its resolver's, the obligation_closed
// event of a closed obligation, the latest reminder's time.
func (v *verifier) sideRows() {
	r := v.r
	for _, s := range v.allSignals {
		if v.states[s.MessageID] == nil {
			r.bad("comms_signals signal_id %d (message_id %s): no chained event records it", s.SignalID, s.MessageID)
			continue
		}
		if s.ResolvedBy != "" && v.states[s.ResolvedBy] == nil {
			r.bad("comms_signals signal_id %d (message_id %s): resolved by %s, which no chained event records", s.SignalID, s.MessageID, s.ResolvedBy)
		}
	}
	for _, o := range v.allObl {
		st := v.states[o.MessageID]
		switch {
		case st == nil:
			r.bad("comms_obligations obligation_id %d (message_id %s): no chained event records it", o.ObligationID, o.MessageID)
		case o.ClosedBy != "" && st.closedID == 0:
			r.bad("comms_obligations obligation_id %d (message_id %s): closed by %s with no obligation_closed event in the chain", o.ObligationID, o.MessageID, o.ClosedBy)
		case o.ClosedBy == "" && st.closedID != 0:
			r.bad("comms_obligations obligation_id %d (message_id %s): open, but event_id %d closed it", o.ObligationID, o.MessageID, st.closedID)
		case o.ClosedBy != "" && v.states[o.ClosedBy] == nil:
			r.bad("comms_obligations obligation_id %d (message_id %s): closed by %s, which no chained event records", o.ObligationID, o.MessageID, o.ClosedBy)
		case o.RemindedAtMs != st.remindedAt:
			r.bad("comms_obligations obligation_id %d (message_id %s): reminded_at_ms %d, the chain says %d", o.ObligationID, o.MessageID, o.RemindedAtMs, st.remindedAt)
		}
	}
}
