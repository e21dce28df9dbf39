package report

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"

	"hm/journal"
	"hm/roles"
)

// Briefing builds the startup briefing (handoffs/briefing.md) for the
// session that is starting (o.SessionID). It reports, in order: the team
// (when o.Roles is set); the previous session's counts (messages, by status,
// by sender); failed deliveries since the previous session began (including
// expired_session ones); messages still pending; open obligations and
// unresolved TASK/BLOCKER signals and recent DECISIONs of the previous and
// current session; and the last BriefingRecentLimit messages of the ledger.
//
// The previous session is the highest-numbered session in the ledger other
// than the current one. o.Now gives the date line and ages.
func Briefing(ctx context.Context, l *journal.Ledger, o Options) ([]byte, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return build(ctx, l, "briefing", func(conn *sqlite.Conn, cov *journal.Cover) ([]byte, error) {
		b, err := loadBriefing(conn, cov, o)
		if err != nil {
			return nil, err
		}
		return renderBriefing(b, o), nil
	})
}

// briefingData is everything the briefing shows.
type briefingData struct {
	current, previous string
	prev              sessionStats
	failedFrom        int64 // failed deliveries are listed from this row id on
	failed            []journal.Message
	moreFailed        bool
	pending           []journal.Message
	morePending       bool
	obligations       []OpenObligation
	moreObl           bool
	openSignals       []signalRow
	moreOpenSig       bool
	decisions         []signalRow
	moreDecisions     bool
	recent            []journal.Message
	moreRecent        bool
	rolePending       map[string]int64 // per role: messages pending for it (capped)
	roleObligations   map[string]int64 // per role: open obligations it owns (capped)
}

func loadBriefing(conn *sqlite.Conn, cov *journal.Cover, o Options) (briefingData, error) {
	b := briefingData{current: o.sessionID()}
	ids, err := sessionIDs(conn)
	if err != nil {
		return b, err
	}
	b.previous = latestSession(ids, b.current, o.sessionNumber())
	if b.previous != "" {
		if b.prev, err = loadSessionStats(conn, b.previous); err != nil {
			return b, err
		}
		b.failedFrom = b.prev.firstRow
	}
	// The sessions whose obligations and signals are still actionable:
	// both are closed only by messages of their own session.
	s1, s2, err := obligationSessions(conn, o)
	if err != nil {
		return b, err
	}

	if b.failed, b.moreFailed, err = loadFailedSince(conn, b.failedFrom, b.prev.firstMs); err != nil {
		return b, fmt.Errorf("failed deliveries: %w", err)
	}
	if b.pending, b.morePending, err = loadMessages(conn, qPending, BriefingListLimit); err != nil {
		return b, fmt.Errorf("pending deliveries: %w", err)
	}
	if b.obligations, b.moreObl, err = loadOpenObligations(conn, cov, s1, s2, "", BriefingListLimit); err != nil {
		return b, err
	}
	if b.openSignals, b.moreOpenSig, err = loadSignals(conn, cov, qOpenSignals, BriefingListLimit, s1, s2); err != nil {
		return b, err
	}
	if b.decisions, b.moreDecisions, err = loadSignals(conn, cov, qDecisions, BriefingDecisionLimit, s1, s2); err != nil {
		return b, err
	}
	if b.recent, b.moreRecent, err = loadMessages(conn, qRecent, BriefingRecentLimit); err != nil {
		return b, fmt.Errorf("recent messages: %w", err)
	}
	if len(o.Roles) > 0 {
		b.rolePending = map[string]int64{}
		b.roleObligations = map[string]int64{}
		for _, r := range o.Roles {
			k := strings.ToLower(r.Role)
			n, err := count(conn, qRolePending, r.Role, countCap)
			if err != nil {
				return b, fmt.Errorf("pending for %s: %w", r.Role, err)
			}
			b.rolePending[k] = n
			if n, err = count(conn, qRoleObligations, s1, s2, r.Role, countCap); err != nil {
				return b, fmt.Errorf("obligations of %s: %w", r.Role, err)
			}
			b.roleObligations[k] = n
		}
	}
	return b, nil
}

func renderBriefing(b briefingData, o Options) []byte {
	now := o.Now
	var d doc
	d.title("Startup Briefing: " + dash(b.current))
	intro := "Built from the evidence ledger on " + now.UTC().Format("2006-01-02 15:04") + " UTC. Times are UTC; ages are relative to that moment."
	if b.previous != "" {
		intro += " Previous session: " + Cell(b.previous) + "."
	} else {
		intro += " No previous session is recorded."
	}
	d.para(intro)

	if len(o.Roles) > 0 {
		d.section("Team")
		senders := b.prev.bySender()
		rows := make([][]string, 0, len(o.Roles))
		for _, r := range roleLines(o.Roles, nil) {
			k := strings.ToLower(r.role)
			st := senders[k]
			rows = append(rows, []string{r.role, dash(r.header), dash(r.pane), itoa(st.n), lastSeq(st), capped(b.rolePending[k]), capped(b.roleObligations[k])})
		}
		d.table([]string{"role", "header", "pane", "sent last session", "last seq", "pending for it", "open obligations"}, rows, 3, 5, 6)
	}

	d.section("Previous Session")
	switch {
	case b.previous == "":
		d.none("No previous session in the ledger.")
	case b.prev.total == 0:
		d.bullet("Session: " + Cell(b.previous))
		d.bullet("Messages: 0")
	default:
		p := b.prev
		d.bullet("Session: " + Cell(p.id))
		d.bullet(fmt.Sprintf("Messages: %d, row ids %d to %d", p.total, p.firstRow, p.lastRow))
		d.bullet(fmt.Sprintf("First message: %s UTC", fmtTime(p.firstMs)))
		d.bullet(fmt.Sprintf("Last message: %s UTC (%s ago)", fmtTime(p.lastMs), fmtAge(now, p.lastMs)))
		writeCountTable(&d, "status", p.byStatus())
		writeRoleTable(&d, nil, p.bySender(), "messages")
	}

	d.section("Failed Deliveries")
	failedIntro := "Messages that could not be delivered."
	if b.previous != "" {
		failedIntro = "Messages that could not be delivered, since " + Cell(b.previous) + " began. `expired_session`: still undelivered when a session ended and too old to deliver after the restart."
	}
	d.list("No failed deliveries.", failedIntro,
		[]string{"row", "session", "time", "from", "to", "ref", "error", "body"},
		rowsOf(b.failed, func(m journal.Message) []string {
			return []string{itoa(m.RowID), dash(m.SessionID), fmtTime(msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), dash(string(m.ErrorCode)), roles.ViewContent(m.RawBody)}
		}), b.moreFailed, BriefingListLimit, "failed deliveries", 0)

	d.section("Pending Deliveries")
	d.list("No messages pending delivery.", "Messages still pending: committed but not yet handed to a pane or listener (status brokered).",
		[]string{"row", "session", "time", "age", "from", "to", "ref", "body"},
		rowsOf(b.pending, func(m journal.Message) []string {
			return []string{itoa(m.RowID), dash(m.SessionID), fmtTime(msgTime(m)), fmtAge(now, msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), roles.ViewContent(m.RawBody)}
		}), b.morePending, BriefingListLimit, "pending messages", 0)

	d.section("Open Obligations")
	d.list("No open obligations.", "[ACK REQUIRED] messages whose target has not answered with a reference to them.",
		[]string{"ref", "owner (must answer)", "requester", "session", "opened", "age", "message"},
		rowsOf(b.obligations, func(ob OpenObligation) []string {
			return []string{dash(ob.Ref), dash(ob.OwnerRole), dash(ob.RequesterRole), dash(ob.SessionID), fmtTime(ob.OpenedAtMs), fmtAge(now, ob.OpenedAtMs), roles.ViewContent(ob.Body)}
		}), b.moreObl, BriefingListLimit, "open obligations")

	d.section("Unresolved Tasks and Blockers")
	d.list("No unresolved TASK or BLOCKER signals.", "",
		[]string{"ref", "kind", "from", "session", "time", "age", "text"},
		rowsOf(b.openSignals, func(s signalRow) []string {
			return []string{dash(s.Ref), s.Kind, dash(s.SenderRole), dash(s.SessionID), fmtTime(s.AtMs), fmtAge(now, s.AtMs), s.Text}
		}), b.moreOpenSig, BriefingListLimit, "unresolved signals")

	d.section("Recent Decisions")
	d.list("No DECISION signals.", "",
		[]string{"ref", "from", "session", "time", "text"},
		rowsOf(b.decisions, func(s signalRow) []string {
			return []string{dash(s.Ref), dash(s.SenderRole), dash(s.SessionID), fmtTime(s.AtMs), s.Text}
		}), b.moreDecisions, BriefingDecisionLimit, "decisions")

	// The whole tail of the ledger is asked for, so no note says it was cut.
	d.section(fmt.Sprintf("Last %d Messages", BriefingRecentLimit))
	d.list("The ledger is empty.", "",
		[]string{"row", "session", "time", "from", "to", "ref", "delivery", "body"},
		rowsOf(b.recent, func(m journal.Message) []string {
			return []string{itoa(m.RowID), dash(m.SessionID), fmtTime(msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), statusCell(m), roles.ViewContent(m.RawBody)}
		}), false, BriefingRecentLimit, "messages", 0)
	return d.bytes()
}

// loadFailedSince lists, oldest row first and at most BriefingListLimit of
// them, the failed messages from row id fromRow on, and those of earlier
// rows that changed (failed) at or after sinceMs: a message an earlier
// session left pending fails at this start or during the previous
// session, after its row.
func loadFailedSince(conn *sqlite.Conn, fromRow, sinceMs int64) ([]journal.Message, bool, error) {
	failed, more, err := loadMessages(conn, qFailed, BriefingListLimit, fromRow, int64(allRows), "")
	if err != nil || fromRow <= 0 {
		return failed, more, err
	}
	late, moreLate, err := loadMessages(conn, qFailedSince, BriefingListLimit, sinceMs, fromRow)
	if err != nil {
		return nil, false, err
	}
	if len(late) == 0 {
		return failed, more, nil
	}
	all := append(late, failed...)
	slices.SortFunc(all, func(a, b journal.Message) int { return cmp.Compare(a.RowID, b.RowID) })
	if n := len(all) - BriefingListLimit; n > 0 {
		all, more = all[n:], true
	}
	return all, more || moreLate, nil
}
