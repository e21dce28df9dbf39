package report

import (
	"context"
	"fmt"
	"slices"

	"zombiezen.com/go/sqlite"

	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// Handoff builds the session handoff (handoffs/session.md) for the session
// named by o (see Options.SessionID). Its sections, in order: Coverage,
// Open Obligations, Tagged Signals, Failed Deliveries, Stuck Deliveries,
// Pending Deliveries, Recent Messages (the last HandoffRecentLimit messages of the session).
//
// The output depends only on the ledger's contents, o.SessionID/Session
// and o.Roles: it never reads the clock, renders times from the ledger in
// UTC and orders rows by id, so the same ledger gives byte-identical output.
// All queries run in one read transaction.
func Handoff(ctx context.Context, l *journal.Ledger, o Options) ([]byte, error) {
	return build(ctx, l, "handoff", func(conn *sqlite.Conn, cov *journal.Cover) ([]byte, error) {
		return buildHandoff(conn, cov, o)
	})
}

// build runs fn in one read transaction of l, with the journal.Cover that
// keeps the reports to the signals and obligations the keyed chain covers;
// what names the report in errors ("report <what>: …").
func build(ctx context.Context, l *journal.Ledger, what string, fn func(*sqlite.Conn, *journal.Cover) ([]byte, error)) ([]byte, error) {
	if l == nil {
		return nil, fmt.Errorf("report %s: %w", what, ErrNoLedger)
	}
	var out []byte
	err := l.Read(ctx, func(conn *sqlite.Conn) error {
		cov, err := l.Cover(conn)
		if err != nil {
			return err
		}
		out, err = fn(conn, cov)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", what, err)
	}
	return out, nil
}

// handoffData is everything the handoff shows.
type handoffData struct {
	session     string
	stats       sessionStats
	obligations []OpenObligation
	moreObl     bool
	signals     []signalRow
	moreSig     bool
	failed      []journal.Message
	moreFailed  bool
	stuck       []StuckMessage
	moreStuck   bool
	pending     []journal.Message
	morePending bool
	recent      []journal.Message
	moreRecent  bool
}

func loadHandoff(conn *sqlite.Conn, cov *journal.Cover, o Options) (handoffData, error) {
	var h handoffData
	h.session = o.sessionID()
	if h.session == "" {
		ids, err := sessionIDs(conn)
		if err != nil {
			return h, err
		}
		h.session = latestSession(ids, "", 0)
	}
	var err error
	if h.stats, err = loadSessionStats(conn, h.session); err != nil {
		return h, err
	}
	// The handoff is the record of one session: its own obligations only
	// (the briefing and hm status carry the previous session's too).
	if h.obligations, h.moreObl, err = loadOpenObligations(conn, cov, h.session, h.session, "", HandoffListLimit); err != nil {
		return h, err
	}
	if h.signals, h.moreSig, err = loadSignals(conn, cov, qSignals, HandoffListLimit, h.session); err != nil {
		return h, err
	}
	if h.stats.total > 0 {
		h.failed, h.moreFailed, err = loadMessages(conn, qFailed, HandoffListLimit, h.stats.firstRow, h.stats.lastRow, h.session)
		if err != nil {
			return h, fmt.Errorf("failed deliveries: %w", err)
		}
	}
	if h.stuck, h.moreStuck, err = loadStuck(conn, h.session, HandoffListLimit); err != nil {
		return h, fmt.Errorf("stuck deliveries: %w", err)
	}
	if h.pending, h.morePending, err = loadMessages(conn, qPending, HandoffListLimit); err != nil {
		return h, fmt.Errorf("pending deliveries: %w", err)
	}
	if h.recent, h.moreRecent, err = loadMessages(conn, qRecentSession, HandoffRecentLimit, h.session); err != nil {
		return h, fmt.Errorf("recent messages: %w", err)
	}
	return h, nil
}

func buildHandoff(conn *sqlite.Conn, cov *journal.Cover, o Options) ([]byte, error) {
	h, err := loadHandoff(conn, cov, o)
	if err != nil {
		return nil, err
	}
	var d doc
	name := dash(h.session)
	d.title("Session Handoff: " + name)
	d.para("Built from the evidence ledger. Times are UTC; rows are in ledger order, oldest first.")

	d.section("Coverage")
	writeCoverage(&d, h.stats, o.Roles)

	d.section("Open Obligations")
	d.list("No open obligations in this session.", "[ACK REQUIRED] messages whose target has not answered with a reference to them.",
		[]string{"ref", "owner (must answer)", "requester", "opened", "reminded", "message"},
		rowsOf(h.obligations, func(ob OpenObligation) []string {
			return []string{dash(ob.Ref), dash(ob.OwnerRole), dash(ob.RequesterRole), fmtTime(ob.OpenedAtMs), fmtTime(ob.RemindedAtMs), roles.ViewContent(ob.Body)}
		}), h.moreObl, HandoffListLimit, "open obligations")

	d.section("Tagged Signals")
	d.list("No tagged signals in this session.", "",
		[]string{"ref", "kind", "from", "time", "state", "text"},
		rowsOf(h.signals, func(s signalRow) []string {
			return []string{dash(s.Ref), s.Kind, dash(s.SenderRole), fmtTime(s.AtMs), signalState(s), s.Text}
		}), h.moreSig, HandoffListLimit, "signals")

	d.section("Failed Deliveries")
	d.list("No failed deliveries in this session.", "",
		[]string{"row", "time", "from", "to", "ref", "error", "attempts", "body"},
		rowsOf(h.failed, func(m journal.Message) []string {
			return []string{itoa(m.RowID), fmtTime(msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), dash(string(m.ErrorCode)), itoa(m.Attempt), roles.ViewContent(m.RawBody)}
		}), h.moreFailed, HandoffListLimit, "failed deliveries", 0, 6)

	d.section("Stuck Deliveries")
	d.list("No stuck deliveries in this session.", "Messages a pane could not get submitted (ack status stuck); one that never reached the program is typed again when the hub restarts.",
		[]string{"row", "time", "from", "to", "ref", "reason", "body"},
		rowsOf(h.stuck, func(m StuckMessage) []string {
			return []string{itoa(m.RowID), fmtTime(msgTime(m.Message)), dash(m.SenderRole), dash(m.TargetRole), ref(m.Message), dash(m.Reason), roles.ViewContent(m.RawBody)}
		}), h.moreStuck, HandoffListLimit, "stuck deliveries", 0)

	d.section("Pending Deliveries")
	d.list("No messages pending delivery.", "Committed but not yet handed to a pane or listener (status brokered), in any session.",
		[]string{"row", "session", "time", "from", "to", "ref", "channel", "body"},
		rowsOf(h.pending, func(m journal.Message) []string {
			return []string{itoa(m.RowID), dash(m.SessionID), fmtTime(msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), dash(m.Channel), roles.ViewContent(m.RawBody)}
		}), h.morePending, HandoffListLimit, "pending deliveries", 0)

	d.section("Recent Messages")
	d.list("No messages in this session.", fmt.Sprintf("The last %d messages of the session. A message is \"%s\" once its CLI reports it (hooks: `hm init`) or its listener acknowledges it.", HandoffRecentLimit, status.DeliveredVerified.Plain()),
		[]string{"row", "time", "from", "to", "ref", "channel", "delivery", "body"},
		rowsOf(h.recent, func(m journal.Message) []string {
			return []string{itoa(m.RowID), fmtTime(msgTime(m)), dash(m.SenderRole), dash(m.TargetRole), ref(m), dash(m.Channel), statusCell(m), roles.ViewContent(m.RawBody)}
		}), h.moreRecent, HandoffRecentLimit, "messages", 0)
	return d.bytes(), nil
}

// writeCoverage writes the Coverage section body: what the session holds.
func writeCoverage(d *doc, s sessionStats, team []RoleInfo) {
	d.bullet("Session: " + Cell(dash(s.id)))
	if s.total == 0 {
		d.bullet("Messages: 0")
		if len(team) > 0 {
			writeRoleTable(d, team, nil, "sent")
		}
		return
	}
	d.bullet(fmt.Sprintf("Messages: %d, row ids %d to %d", s.total, s.firstRow, s.lastRow))
	d.bullet(fmt.Sprintf("First message: %s UTC (row %d)", fmtTime(s.firstMs), s.firstRow))
	d.bullet(fmt.Sprintf("Last message: %s UTC (row %d)", fmtTime(s.lastMs), s.lastRow))
	writeCountTable(d, "status", s.byStatus())
	writeCountTable(d, "channel", s.byChannel())
	writeRoleTable(d, team, s.bySender(), "sent")
}

// writeCountTable writes a two-column "<what> | messages" table.
func writeCountTable(d *doc, what string, counts []named) {
	rows := make([][]string, 0, len(counts))
	for _, c := range counts {
		rows = append(rows, []string{dash(c.name), itoa(c.n)})
	}
	d.table([]string{what, "messages"}, rows, 1)
}

// writeRoleTable writes the per-sender table of a session. With a team it
// lists every member (role, header, pane) and then other senders; without
// one only the senders. sent titles the message-count column.
func writeRoleTable(d *doc, team []RoleInfo, senders map[string]senderStat, sent string) {
	lines := roleLines(team, senders)
	if len(lines) == 0 {
		return
	}
	rows := make([][]string, 0, len(lines))
	if len(team) == 0 {
		for _, r := range lines {
			rows = append(rows, []string{r.role, itoa(r.stat.n), lastSeq(r.stat)})
		}
		d.table([]string{"sender", sent, "last seq"}, rows, 1)
		return
	}
	programs := slices.ContainsFunc(team, func(r RoleInfo) bool { return r.Program != "" })
	for _, r := range lines {
		row := []string{r.role, dash(r.header), dash(r.pane)}
		if programs {
			row = append(row, dash(r.program))
		}
		rows = append(rows, append(row, itoa(r.stat.n), lastSeq(r.stat)))
	}
	head := []string{"role", "header", "pane"}
	if programs {
		// How each pane's program came to be (#37): adopted after a hub
		// restart, restarted blank, or resumed on its CLI session.
		head = append(head, "program")
	}
	d.table(append(head, sent, "last seq"), rows, len(head))
}

// signalState describes whether a signal still needs attention: TASK and
// BLOCKER signals are open until a message references them.
func signalState(s signalRow) string {
	if s.Kind != journal.SignalTask && s.Kind != journal.SignalBlocker {
		return "—"
	}
	if s.ResolvedBy == "" {
		return "open"
	}
	if s.resolvedRef != "" {
		return "resolved by " + s.resolvedRef
	}
	return "resolved by " + s.ResolvedBy
}
