package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"

	"hm/journal"
)

// briefingNow is when session 8 starts in the golden briefing.
var briefingNow = time.Date(2026, 11, 22, 8, 30, 0, 0, time.UTC)

var handoffSections = []string{"## Coverage", "## Open Obligations", "## Tagged Signals", "## Failed Deliveries", "## Stuck Deliveries", "## Pending Deliveries", "## Recent Messages"}

// TestHandoffGolden: the handoff of the fixture's session 7; its role
// table says how each pane's program came to be, in the hub's words
// (RoleInfo.Program, #37; the slot's pane is gone: no words).
func TestHandoffGolden(t *testing.T) {
	t.Parallel()
	l := buildFixture(t, t.TempDir())
	team := slices.Clone(fixtureRoles)
	for i, words := range []string{"started", "adopted", "resumed (2 restarts, 1 resumed)"} {
		team[i].Program = words
	}
	got, err := Handoff(ctxT(t), l, Options{SessionID: "app-session-7", Roles: team})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "handoff.golden", got)
	checkSectionOrder(t, got, handoffSections)
	checkTables(t, got)

	s := string(got)
	for _, c := range []struct {
		name string
		want bool
		text string
	}{
		{"open obligation ARCH #2 listed", true, "| ARCH #2 | oracle | architect |"},
		{"closed obligation ARCH #1 not listed", false, "| ARCH #1 | builder |"},
		{"older session's obligation not listed", false, "Old ask"},
		{"open task", true, "| BUILDER #1 | TASK | builder |"},
		{"resolved task", true, "resolved by ARCH #4"},
		{"resolved blocker", true, "resolved by ARCH #3"},
		{"open blocker", true, "| BUILDER-BG-1 #1 | BLOCKER | builder-bg-1 |"},
		{"finding", true, "| BUILDER #1 | FINDING |"},
		{"decision", true, "| ORACLE #1 | DECISION |"},
		{"expired failure", true, "| expired_session |"},
		{"older session's failure not listed", false, "no_route"},
		{"pending of this session", true, "please review the PR thanks"},
		{"pending of the next session", true, "hello from the new session"},
		{"pipe escaped", true, `Build the parser \| use table-driven tests`},
		{"newlines and tabs collapsed", true, `run\|job 42 then report back`},
		{"long body cut", true, CellMarker},
		{"long body end not shown", false, "END-OF-LONG-BODY"},
		{"unknown send time falls back to brokered", true, "| 2026-11-21 09:10:00 | user | architect |"},
		{"stuck message listed with its reason", true, "| ARCH #6 | message stuck: the text never appeared on the screen in 3 typings | (ARCH #6): run the \\| migration |"},
		{"coverage row range", true, "row ids 3 to 16"},
		{"coverage first", true, "First message: 2026-11-21 09:02:00 UTC (row 3)"},
		{"coverage last", true, "Last message: 2026-11-21 09:15:00 UTC (row 16)"},
		{"status count", true, "| acked | 7 |"},
		{"channel count", true, "| telegram | 1 |"},
		{"per-role line", true, "| architect | ARCH | 1 | started | 6 | #6 |"},
		{"sender without role", true, "| system | — | — | — | 1 | — |"},
		{"reminded time", true, "2026-11-21 18:00:00"},
		{"no wall-clock ages", false, " ago"},
	} {
		if strings.Contains(s, c.text) != c.want {
			t.Errorf("%s: contains %q = %v, want %v", c.name, c.text, !c.want, c.want)
		}
	}
}

func TestBriefingGolden(t *testing.T) {
	t.Parallel()
	l := buildFixture(t, t.TempDir())
	got, err := Briefing(ctxT(t), l, Options{SessionID: "app-session-8", Now: briefingNow, Roles: fixtureRoles})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "briefing.golden", got)
	checkSectionOrder(t, got, []string{"## Team", "## Previous Session", "## Failed Deliveries", "## Pending Deliveries",
		"## Open Obligations", "## Unresolved Tasks and Blockers", "## Recent Decisions", "## Last 30 Messages"})
	checkTables(t, got)

	s := string(got)
	for _, c := range []struct {
		name    string
		section string // "" = whole document
		want    bool
		text    string
	}{
		{"title", "", true, "# Startup Briefing: app-session-8\n"},
		{"previous session named", "", true, "Previous session: app-session-7."},
		{"previous counts", "## Previous Session", true, "Messages: 14, row ids 3 to 16"},
		{"count by status", "## Previous Session", true, "| failed | 1 |"},
		{"count by sender", "## Previous Session", true, "| builder | 3 | #3 |"},
		{"team line", "## Team", true, "| oracle | ORACLE | 3 | 2 | #2 | 1 | 1 |"},
		{"expired failure", "## Failed Deliveries", true, "| expired_session |"},
		{"older failure excluded", "", false, "no_route"},
		{"pending with age", "## Pending Deliveries", true, "| 12 | app-session-7 | 2026-11-21 09:11:00 | 23h19m |"},
		{"pending of the current session", "## Pending Deliveries", true, "hello from the new session"},
		{"open obligation", "## Open Obligations", true, "| ARCH #2 | oracle | architect | app-session-7 |"},
		{"closed obligation excluded", "## Open Obligations", false, "ARCH #1"},
		{"older obligation excluded", "## Open Obligations", false, "Old ask"},
		{"open task", "## Unresolved Tasks and Blockers", true, "| BUILDER #1 | TASK | builder |"},
		{"open blocker", "## Unresolved Tasks and Blockers", true, "| BUILDER-BG-1 #1 | BLOCKER |"},
		{"resolved task excluded", "## Unresolved Tasks and Blockers", false, "update the docs"},
		{"resolved blocker excluded", "## Unresolved Tasks and Blockers", false, "staging DB is down"},
		{"older task excluded", "", false, "old task from session 6"},
		{"decision", "## Recent Decisions", true, "| ORACLE #2 | oracle | app-session-7 | 2026-11-21 09:13:00 | ship on Friday — ünïcödé 🚀 |"},
		{"finding not in briefing signals", "", false, "| FINDING |"},
		{"last messages span sessions", "## Last 30 Messages", true, "| 1 | app-session-6 |"},
		{"last messages include current session", "## Last 30 Messages", true, "hello from the new session"},
		{"date line", "", true, "on 2026-11-22 08:30 UTC"},
	} {
		in := s
		if c.section != "" {
			in = sectionBody(s, c.section)
			if in == "" {
				t.Errorf("%s: no section %q", c.name, c.section)
				continue
			}
		}
		if strings.Contains(in, c.text) != c.want {
			t.Errorf("%s: contains %q = %v, want %v", c.name, c.text, !c.want, c.want)
		}
	}
}

// checkSectionOrder asserts that the "## " headings are exactly want, in
// order.
func checkSectionOrder(t *testing.T, doc []byte, want []string) {
	t.Helper()
	var got []string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sections:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

// checkTables asserts every table row has as many cells as its header.
func checkTables(t *testing.T, doc []byte) {
	t.Helper()
	cols := -1
	for i, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = -1
			continue
		}
		n := len(unescapedPipe.FindAllStringIndex(line, -1))
		// "| a | b |": the leading pipe has no predecessor; count it too.
		if cols < 0 {
			cols = n
			continue
		}
		if n != cols {
			t.Errorf("line %d has %d cell separators, header has %d: %q", i+1, n, cols, line)
		}
	}
}

func TestHandoffDeterministic(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	o := Options{SessionID: "app-session-7", Roles: fixtureRoles}
	l1 := buildFixture(t, t.TempDir())
	l2 := buildFixture(t, t.TempDir())
	a, err := Handoff(ctx, l1, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Handoff(ctx, l1, o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Handoff(ctx, l2, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("same ledger, two calls: handoffs differ")
	}
	if !bytes.Equal(a, c) {
		t.Errorf("same contents, two ledgers: handoffs differ:\n%s\n---\n%s", a, c)
	}
	// Options.Now must not matter, and Session gives the same as SessionID.
	d, err := Handoff(ctx, l1, Options{Session: 7, Now: time.Now(), Roles: fixtureRoles})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, d) {
		t.Error("handoff depends on Now or on how the session is named")
	}
}

func TestHandoffDefaultsToLatestSession(t *testing.T) {
	t.Parallel()
	l := buildFixture(t, t.TempDir())
	got, err := Handoff(ctxT(t), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("# Session Handoff: app-session-8\n")) {
		t.Errorf("handoff without a session should cover the latest one:\n%s", got)
	}
}

func TestPreviousSessionSelection(t *testing.T) {
	t.Parallel()
	ids := []string{"", "app-session-10", "app-session-2", "app-session-9", "custom", "app-session-x"}
	for _, c := range []struct {
		skipID string
		skipN  int
		want   string
	}{
		{"app-session-11", 11, "app-session-10"},
		{"app-session-10", 10, "app-session-9"},
		{"app-session-3", 3, "app-session-10"}, // highest other, even if newer
		{"", 0, "app-session-10"},
	} {
		if got := latestSession(ids, c.skipID, c.skipN); got != c.want {
			t.Errorf("latestSession(skip %q) = %q, want %q", c.skipID, got, c.want)
		}
	}
	if got := latestSession([]string{"b", "a", "c"}, "c", 0); got != "b" {
		t.Errorf("fallback without numbered sessions = %q, want b", got)
	}
	if got := latestSession(nil, "", 0); got != "" {
		t.Errorf("no sessions = %q, want empty", got)
	}
}

func TestEmptyLedger(t *testing.T) {
	t.Parallel()
	l := openLedger(t, t.TempDir())
	ctx := ctxT(t)
	h, err := Handoff(ctx, l, Options{SessionID: "app-session-1", Roles: fixtureRoles})
	if err != nil {
		t.Fatal(err)
	}
	checkSectionOrder(t, h, handoffSections)
	checkTables(t, h)
	for _, want := range []string{"Session: app-session-1", "Messages: 0", "_No open obligations in this session._",
		"_No messages pending delivery._", "| architect | ARCH | 1 | 0 | — |"} {
		if !bytes.Contains(h, []byte(want)) {
			t.Errorf("empty handoff lacks %q:\n%s", want, h)
		}
	}
	b, err := Briefing(ctx, l, Options{Session: 1, Now: briefingNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Startup Briefing: app-session-1", "No previous session is recorded.", "_The ledger is empty._"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("empty briefing lacks %q:\n%s", want, b)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	l := openLedger(t, t.TempDir())
	ctx := ctxT(t)
	const n = 130
	ms := make([]*journal.Message, 0, n)
	for i := range n {
		st, code := status.Failed, status.Code("delivery_timeout")
		if i%2 == 0 {
			st, code = status.Brokered, ""
		}
		ms = append(ms, &journal.Message{
			MessageID: fmt.Sprintf("x-%03d", i), SessionID: "app-session-3", SenderRole: "architect", TargetRole: "builder",
			Channel: "ws", Header: "ARCH", Seq: int64(i + 1), SentAtMs: t0 + int64(i), BrokeredAtMs: t0 + int64(i), UpdatedAtMs: t0 + int64(i),
			RawBody: fmt.Sprintf("(ARCH #%d): [ACK REQUIRED] TASK: item %d", i+1, i), Status: st, ErrorCode: code,
			Obligation: &journal.Obligation{OwnerRole: "builder"},
			Signals:    []journal.Signal{{Kind: "TASK", Text: fmt.Sprintf("item %d", i)}, {Kind: "DECISION", Text: fmt.Sprintf("choice %d", i)}},
		})
	}
	if err := l.AppendBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	h, err := Handoff(ctx, l, Options{Session: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, h)
	recent := sectionBody(string(h), "## Recent Messages")
	if got := countRows(recent); got != HandoffRecentLimit {
		t.Errorf("recent messages: %d rows, want %d", got, HandoffRecentLimit)
	}
	if !strings.Contains(recent, "\n| 31 |") || strings.Contains(recent, "\n| 30 |") || !strings.HasSuffix(strings.Split(recent, "\n\n_Only")[0], "| 130 | 2026-11-21 09:00:00 | architect | builder | ARCH #130 | ws | failed | (ARCH #130): [ACK REQUIRED] TASK: item 129 |") {
		t.Errorf("recent messages should be rows 31..130 in order:\n%s", recent)
	}
	if !strings.Contains(recent, "Only the newest 100 messages") {
		t.Error("recent messages: missing the truncation note")
	}
	if got := countRows(sectionBody(string(h), "## Open Obligations")); got != HandoffListLimit {
		t.Errorf("obligations: %d rows, want %d", got, HandoffListLimit)
	}
	if got := countRows(sectionBody(string(h), "## Tagged Signals")); got != HandoffListLimit {
		t.Errorf("signals: %d rows, want %d", got, HandoffListLimit)
	}
	if got := countRows(sectionBody(string(h), "## Failed Deliveries")); got != n/2 {
		t.Errorf("failed: %d rows, want %d", got, n/2)
	}
	if got := countRows(sectionBody(string(h), "## Pending Deliveries")); got != n/2 {
		t.Errorf("pending: %d rows, want %d", got, n/2)
	}

	b, err := Briefing(ctx, l, Options{Session: 4, Now: briefingNow})
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, b)
	for sec, want := range map[string]int{
		"## Failed Deliveries":                                  BriefingListLimit,
		"## Pending Deliveries":                                 BriefingListLimit,
		"## Open Obligations":                                   BriefingListLimit,
		"## Unresolved Tasks and Blockers":                      BriefingListLimit,
		"## Recent Decisions":                                   BriefingDecisionLimit,
		fmt.Sprintf("## Last %d Messages", BriefingRecentLimit): BriefingRecentLimit,
	} {
		if got := countRows(sectionBody(string(b), sec)); got != want {
			t.Errorf("briefing %s: %d rows, want %d", sec, got, want)
		}
	}
}

// sectionBody returns the text between heading and the next "## ".
func sectionBody(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// countRows counts table data rows (not header or separator).
func countRows(section string) int {
	n := 0
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			n++
		}
	}
	return max(0, n-2)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	if _, err := Handoff(t.Context(), nil, Options{}); !errors.Is(err, ErrNoLedger) {
		t.Errorf("Handoff(nil) = %v, want ErrNoLedger", err)
	}
	if _, err := Briefing(t.Context(), nil, Options{}); !errors.Is(err, ErrNoLedger) {
		t.Errorf("Briefing(nil) = %v, want ErrNoLedger", err)
	}
	l := buildFixture(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Handoff(ctx, l, Options{Session: 7}); !errors.Is(err, context.Canceled) {
		t.Errorf("Handoff(canceled) = %v, want context.Canceled", err)
	}
	if _, err := Briefing(ctx, l, Options{Session: 8}); !errors.Is(err, context.Canceled) {
		t.Errorf("Briefing(canceled) = %v, want context.Canceled", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Handoff(t.Context(), l, Options{Session: 7}); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Handoff(closed) = %v, want journal.ErrClosed", err)
	}
	if _, err := Briefing(t.Context(), l, Options{Session: 8}); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Briefing(closed) = %v, want journal.ErrClosed", err)
	}
}

// TestQueryPlans checks that every report query is served by an index
// (whichever one the planner prefers): the only full-table walk allowed is
// the LIMITed newest-rows scan in row-id order.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	l := openLedger(t, t.TempDir())
	for _, c := range []struct {
		name  string
		query string
		args  []any
		want  []string // plan fragments that must appear
	}{
		{"next session", qNextSession, []any{""}, []string{"SEARCH comms_journal USING COVERING INDEX", "(session_id>?)"}},
		{"session counts", qSessionCounts, []any{"s"}, []string{"SEARCH comms_session_counts USING PRIMARY KEY", "(session_id=?)"}},
		{"session first", qSessionFirst, []any{"s"}, []string{"SEARCH comms_journal USING", "(session_id=?)"}},
		{"session last", qSessionLast, []any{"s"}, []string{"SEARCH comms_journal USING", "(session_id=?)"}},
		{"failed", qFailed, []any{1, 2, "s", 3}, []string{"SEARCH comms_journal USING INDEX comms_journal_failed", "(row_id>? AND row_id<?)"}},
		{"failed since", qFailedSince, []any{1, 2, 3}, []string{"SEARCH comms_journal USING INDEX comms_journal_failed_at (updated_at_ms>?)"}},
		{"stuck", qStuck, []any{"s", 3}, []string{"USING INDEX comms_journal_stuck", "SEARCH e USING INDEX comms_events_message (message_id=?)"}},
		{"pending", qPending, []any{3}, []string{"comms_journal USING INDEX comms_journal_pending"}},
		{"recent", qRecent, []any{3}, []string{"SCAN comms_journal"}},
		{"recent session", qRecentSession, []any{"s", 3}, []string{"SEARCH comms_journal USING", "(session_id=?)"}},
		{"open obligations", qOpenObligations, []any{"a", "b", "", 3}, []string{"SEARCH comms_obligations USING INDEX comms_obligations_open_session (session_id=?)", "(message_id=?)"}},
		{"signals", qSignals, []any{"s", 3}, []string{"SEARCH comms_signals USING INDEX comms_signals_session (session_id=?)", "(message_id=?)"}},
		{"open signals", qOpenSignals, []any{"a", "b", 3}, []string{"SEARCH comms_signals USING INDEX comms_signals_open (session_id=?)", "(message_id=?)"}},
		{"decisions", qDecisions, []any{"a", "b", 3}, []string{"SEARCH comms_signals USING INDEX comms_signals_decisions (session_id=?)", "(message_id=?)"}},
		{"role pending", qRolePending, []any{"r", 3}, []string{"COVERING INDEX comms_journal_pending"}},
		{"role obligations", qRoleObligations, []any{"a", "b", "r", 3}, []string{"SEARCH comms_obligations USING INDEX", "(session_id=? AND owner_role=?)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plan []string
			err := l.Read(t.Context(), func(conn *sqlite.Conn) error {
				return exec(conn, "EXPLAIN QUERY PLAN "+c.query, func(stmt *sqlite.Stmt) error {
					plan = append(plan, stmt.ColumnText(3))
					return nil
				}, c.args...)
			})
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(plan, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("plan lacks %q:\n%s", w, all)
				}
			}
			// The per-session lists unite LIMITed index walks in a
			// subquery (o or s), whose few rows are then scanned.
			united := strings.Contains(all, "COMPOUND QUERY") || c.name == "signals"
			for _, line := range plan {
				// A scan of a partial index reads only the rows it holds
				// (the pending, failed or stuck ones), which is what we want.
				partial := strings.Contains(line, "INDEX comms_journal_pending") || strings.Contains(line, "INDEX comms_journal_failed") ||
					strings.Contains(line, "INDEX comms_journal_stuck")
				if united && (line == "SCAN o" || line == "SCAN s") {
					continue
				}
				if strings.Contains(line, "TEMP B-TREE") && !united && c.name != "session counts" {
					t.Errorf("sort in plan: %q\n%s", line, all)
				}
				if strings.HasPrefix(line, "SCAN ") && !strings.HasPrefix(line, "SCAN (subquery") && c.name != "recent" && !partial {
					t.Errorf("full scan in plan: %q\n%s", line, all)
				}
			}
		})
	}
}

func TestBriefingZeroNowUsesClock(t *testing.T) {
	t.Parallel()
	l := buildFixture(t, t.TempDir())
	before := time.Now().UTC()
	b, err := Briefing(ctxT(t), l, Options{Session: 8})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	if !bytes.Contains(b, []byte("on "+before.Format("2006-01-02"))) && !bytes.Contains(b, []byte("on "+after.Format("2006-01-02"))) {
		t.Errorf("briefing with zero Now does not carry today's date:\n%s", b)
	}
}
