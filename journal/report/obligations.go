package report

import (
	"context"
	"fmt"
	"hm/roles"

	"zombiezen.com/go/sqlite"

	"hm/journal"
)

// The one rule for which obligations are open, behind `hm status`, the
// cockpit (through the hub's status and the broker's status query), the
// briefing and the handoff (issue #34): an obligation not closed yet, of
// the current session or of the session before it. An obligation closes
// only by a reference from its own session (SPEC §10: "ARCH #12" names
// another message once numbers restart), so one from the previous session
// is carried for one session, for the team to see and answer in words; a
// restart later it is history (hm comms history, the ledger), no longer
// listed anywhere.

// OpenObligation is an open obligation with the message that opened it.
type OpenObligation struct {
	journal.Obligation
	// Body is the raw body of the message that opened it; Target the
	// role it was sent to.
	Body   string
	Target string
}

// ObligationListLimit bounds the open obligations `hm status` and the
// cockpit list.
const ObligationListLimit = 50

// OpenObligations returns the open obligations for the session o names
// (the rule above), those role owes or is owed ("" for every role): the
// newest limit of them, oldest first; more says there are more.
func OpenObligations(ctx context.Context, l *journal.Ledger, o Options, role string, limit int) (out []OpenObligation, more bool, err error) {
	if l == nil {
		return nil, false, fmt.Errorf("open obligations: %w", ErrNoLedger)
	}
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		cov, err := l.Cover(conn)
		if err != nil {
			return err
		}
		s1, s2, err := obligationSessions(conn, o)
		if err != nil {
			return err
		}
		out, more, err = loadOpenObligations(conn, cov, s1, s2, role, limit)
		return err
	})
	return out, more, err
}

// obligationSessions returns the two sessions whose obligations are open
// for the session o names: the session before it and itself (the same
// one twice when there is only one).
func obligationSessions(conn *sqlite.Conn, o Options) (s1, s2 string, err error) {
	ids, err := sessionIDs(conn)
	if err != nil {
		return "", "", err
	}
	current := o.sessionID()
	if current == "" {
		current = latestSession(ids, "", 0)
	}
	s1, s2 = actionableSessions(sessionBefore(ids, current), current)
	return s1, s2, nil
}

// sessionBefore is the highest-numbered session among ids numbered below
// current ("app-session-N"); for a current id of another form, the latest
// other session (latestSession). A handoff of session 7 built after
// session 8 began still pairs 7 with 6.
func sessionBefore(ids []string, current string) string {
	n, ok := roles.SessionNumber(current)
	if !ok {
		return latestSession(ids, current, 0)
	}
	best, bestN := "", 0
	for _, id := range ids {
		if m, ok := roles.SessionNumber(id); ok && m < n && (m > bestN || (m == bestN && id > best)) {
			best, bestN = id, m
		}
	}
	return best
}

// actionableSessions is the pair of sessions whose obligations and
// unresolved signals are still actionable, given the previous and the
// current session: both, or the one there is twice.
func actionableSessions(previous, current string) (s1, s2 string) {
	s1, s2 = previous, current
	if s1 == "" {
		s1 = s2
	}
	if s2 == "" {
		s2 = s1
	}
	return s1, s2
}

// loadOpenObligations lists the open obligations of sessions s1 and s2
// that role owes or is owed ("" for any), those the keyed chain covers
// (journal.Cover, covered).
func loadOpenObligations(conn *sqlite.Conn, cov *journal.Cover, s1, s2, role string, limit int) ([]OpenObligation, bool, error) {
	out, more, err := loadNewest(conn, qOpenObligations, limit, func(stmt *sqlite.Stmt) OpenObligation {
		return OpenObligation{
			Obligation: journal.ScanObligation(stmt, 0),
			Body:       stmt.ColumnText(journal.ObligationColumnCount),
			Target:     stmt.ColumnText(journal.ObligationColumnCount + 1),
		}
	}, s1, s2, role)
	if err != nil {
		return nil, false, fmt.Errorf("open obligations: %w", err)
	}
	if out, err = covered(cov, out, func(o OpenObligation) string { return o.MessageID }); err != nil {
		return nil, false, fmt.Errorf("open obligations: %w", err)
	}
	return out, more, nil
}
