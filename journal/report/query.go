package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// The report's SQL. Every statement is bounded: a LIMIT, or an equality on
// an indexed session id (comms_journal_session, comms_session_counts,
// comms_obligations_open), or a row-id range on a partial status index.
// Lists of a session's signals and obligations walk an index in id order
// per session (comms_signals_session, comms_signals_open,
// comms_signals_decisions, comms_obligations_open_session) and stop at the
// LIMIT, so no query's cost grows with the size of a session except the
// capped counts. TestQueryPlans checks each one with EXPLAIN QUERY PLAN.
var (
	// qNextSession steps through the distinct session ids with one index
	// seek each (a skip scan over comms_journal_session).
	qNextSession = `SELECT session_id FROM comms_journal WHERE session_id > ?1 ORDER BY session_id LIMIT 1`

	// qSessionCounts reads one session's running counts per (status,
	// channel, sender) group, kept by the ledger writer: a few rows
	// however many messages the session holds. max_seq is exact per
	// sender (bySender), which is all the reports use it for.
	qSessionCounts = `SELECT status, channel, sender_role, n, max_seq
 FROM comms_session_counts WHERE session_id = ?1 AND n > 0`

	// qSessionFirst and qSessionLast give a session's row-id range and the
	// time of its first and last message.
	qSessionFirst = `SELECT row_id, coalesce(sent_at_ms, brokered_at_ms, 0) FROM comms_journal WHERE session_id = ?1 ORDER BY row_id ASC LIMIT 1`
	qSessionLast  = `SELECT row_id, coalesce(sent_at_ms, brokered_at_ms, 0) FROM comms_journal WHERE session_id = ?1 ORDER BY row_id DESC LIMIT 1`

	// qFailed lists failed messages in a row-id range (?1..?2), optionally
	// of one session (?3, "" = any), newest first.
	qFailed = `SELECT ` + journal.MessageColumns + ` FROM comms_journal INDEXED BY comms_journal_failed
 WHERE status = '` + string(status.Failed) + `' AND row_id BETWEEN ?1 AND ?2 AND (?3 = '' OR session_id = ?3)
 ORDER BY row_id DESC LIMIT ?4`

	// qFailedSince lists failed messages whose row comes before row id ?2
	// and whose last change (the failure, or a later one) is at or after
	// ?1 ms, most recently changed first: rows of earlier sessions that
	// failed late, such as a message left pending through a session that
	// expires at the next start.
	qFailedSince = `SELECT ` + journal.MessageColumns + ` FROM comms_journal INDEXED BY comms_journal_failed_at
 WHERE status = '` + string(status.Failed) + `' AND updated_at_ms >= ?1 AND row_id < ?2
 ORDER BY updated_at_ms DESC, row_id DESC LIMIT ?3`

	// qStuck lists messages stuck at a pane, optionally of one session
	// (?1, "" = any), newest first, each with the reason of its latest
	// stuck event.
	qStuck = `SELECT ` + journal.MessageColumns + `, (SELECT json_extract(e.detail_json, '$.error') FROM comms_events e
   WHERE e.message_id = j.message_id AND e.event = '` + string(status.EventStuck) + `' ORDER BY e.event_id DESC LIMIT 1)
 FROM comms_journal j INDEXED BY comms_journal_stuck
 WHERE ack_status = '` + string(status.Stuck) + `' AND (?1 = '' OR session_id = ?1)
 ORDER BY row_id DESC LIMIT ?2`

	// qPending lists messages still pending (status brokered), newest
	// first.
	qPending = `SELECT ` + journal.MessageColumns + ` FROM comms_journal INDEXED BY comms_journal_pending WHERE status = '` + string(status.Brokered) + `' ORDER BY row_id DESC LIMIT ?1`

	// qRecent lists the newest messages of the whole ledger that roles may
	// see (journal.ForRoles: the briefing is typed into a pane).
	qRecent = `SELECT ` + journal.MessageColumns + ` FROM comms_journal WHERE ` + journal.ForRolesSQL("status") + ` ORDER BY row_id DESC LIMIT ?1`

	// qRecentSession lists the newest messages of one session that roles
	// may see (the handoff is what panes are told to read).
	qRecentSession = `SELECT ` + journal.MessageColumns + ` FROM comms_journal WHERE session_id = ?1 AND ` + journal.ForRolesSQL("status") + ` ORDER BY row_id DESC LIMIT ?2`

	// qOpenObligations lists open obligations of up to two sessions (?1,
	// ?2) that role ?3 owes or is owed ("" = any role), newest first, with
	// the body of the message that opened them. Each session's newest ?4
	// come from a backward walk of comms_obligations_open_session; only
	// those are joined and sorted.
	qOpenObligations = `SELECT ` + journal.ObligationColumnsAs("o") + `, coalesce(j.raw_body, ''), coalesce(j.target_role, '')
 FROM (` + perSession(`SELECT * FROM comms_obligations WHERE session_id = %s AND closed_by IS NULL
 AND (?3 = '' OR owner_role = ?3 OR requester_role = ?3) ORDER BY obligation_id DESC LIMIT ?4`, "?1", "?2") + `) o
 LEFT JOIN comms_journal j ON j.message_id = o.message_id
 ORDER BY o.obligation_id DESC LIMIT ?4`

	// qSignals lists all signals of one session, newest first.
	qSignals = signalSelect(`SELECT * FROM comms_signals WHERE session_id = ?1 ORDER BY signal_id DESC LIMIT ?2`, "?2")

	// qOpenSignals lists unresolved TASK and BLOCKER signals of up to two
	// sessions, newest first.
	qOpenSignals = signalSelect(perSession(`SELECT * FROM comms_signals
 WHERE session_id = %s AND kind IN ('TASK', 'BLOCKER') AND resolved_by IS NULL ORDER BY signal_id DESC LIMIT ?3`, "?1", "?2"), "?3")

	// qDecisions lists DECISION signals of up to two sessions, newest
	// first.
	qDecisions = signalSelect(perSession(`SELECT * FROM comms_signals
 WHERE session_id = %s AND kind = 'DECISION' ORDER BY signal_id DESC LIMIT ?3`, "?1", "?2"), "?3")

	// qRolePending counts (up to ?2) messages pending for one role.
	qRolePending = `SELECT count(*) FROM (SELECT 1 FROM comms_journal INDEXED BY comms_journal_pending WHERE target_role = ?1 AND status = '` + string(status.Brokered) + `' LIMIT ?2)`

	// qRoleObligations counts (up to ?4) open obligations a role owns in
	// up to two sessions.
	qRoleObligations = `SELECT count(*) FROM (SELECT 1 FROM comms_obligations
 WHERE session_id IN (?1, ?2) AND owner_role = ?3 AND closed_by IS NULL LIMIT ?4)`
)

// signalSelect reads the signals inner selects (whole comms_signals rows),
// newest first and at most limit (a parameter) of them, each with the ref
// of the message that resolved it.
func signalSelect(inner, limit string) string {
	return `SELECT ` + journal.SignalColumnsAs("s") + `, coalesce(r.header, ''), coalesce(r.seq, 0)
 FROM (` + inner + `) s LEFT JOIN comms_journal r ON r.message_id = s.resolved_by
 ORDER BY s.signal_id DESC LIMIT ` + limit
}

// perSession runs a per-session query (its %s is the session parameter)
// for two session parameters and unites the results (a session given
// twice counts once). Each part is a LIMITed index walk; SQLite would
// otherwise read and sort every matching row of both sessions for an
// IN (?1, ?2) with ORDER BY id.
func perSession(query, s1, s2 string) string {
	return `SELECT * FROM (` + fmt.Sprintf(query, s1) + `) UNION SELECT * FROM (` + fmt.Sprintf(query, s2) + `)`
}

// allRows is the upper end of a row-id range covering the whole ledger.
const allRows = math.MaxInt64

// exec runs query with positional args, calling fn for every row.
func exec(conn *sqlite.Conn, query string, fn func(*sqlite.Stmt) error, args ...any) error {
	return sqlitex.Execute(conn, query, &sqlitex.ExecOptions{Args: args, ResultFunc: fn})
}

// sessionIDs returns the distinct non-empty session ids, in byte order.
func sessionIDs(conn *sqlite.Conn) ([]string, error) {
	var out []string
	last := ""
	for range maxSessions {
		next, found := "", false
		err := exec(conn, qNextSession, func(stmt *sqlite.Stmt) error {
			next, found = stmt.ColumnText(0), true
			return nil
		}, last)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		if !found {
			break
		}
		out = append(out, next)
		last = next
	}
	return out, nil
}

// latestSession returns the highest-numbered "app-session-N" id among ids
// other than skipID and other than number skipN (when skipN > 0). Without
// any numbered id it falls back to the greatest other id in byte order.
func latestSession(ids []string, skipID string, skipN int) string {
	best, bestN := "", -1
	fallback := ""
	for _, id := range ids {
		if id == skipID {
			continue
		}
		n, ok := roles.SessionNumber(id)
		if !ok {
			fallback = max(fallback, id)
			continue
		}
		if skipN > 0 && n == skipN {
			continue
		}
		if n > bestN || (n == bestN && id > best) {
			best, bestN = id, n
		}
	}
	if best == "" {
		return fallback
	}
	return best
}

// countRow is one group of qSessionCounts. maxSeq is the highest seq of
// any message that was ever in the group: per sender, the highest over
// its groups is the sender's highest seq in the session.
type countRow struct {
	status, channel, sender string
	n, maxSeq               int64
}

// sessionStats summarises one session.
type sessionStats struct {
	id                string
	total             int64
	firstRow, lastRow int64
	firstMs, lastMs   int64
	groups            []countRow
}

// named is a label with a count, for the count tables.
type named struct {
	name string
	n    int64
}

// senderStat is what one sender did in a session.
type senderStat struct {
	n, maxSeq int64
}

func loadSessionStats(conn *sqlite.Conn, id string) (sessionStats, error) {
	s := sessionStats{id: id}
	err := exec(conn, qSessionCounts, func(stmt *sqlite.Stmt) error {
		r := countRow{
			status:  stmt.ColumnText(0),
			channel: stmt.ColumnText(1),
			sender:  stmt.ColumnText(2),
			n:       stmt.ColumnInt64(3),
			maxSeq:  stmt.ColumnInt64(4),
		}
		s.total += r.n
		s.groups = append(s.groups, r)
		return nil
	}, id)
	if err != nil {
		return s, fmt.Errorf("count session %s: %w", id, err)
	}
	if s.total == 0 {
		return s, nil
	}
	err = exec(conn, qSessionFirst, func(stmt *sqlite.Stmt) error {
		s.firstRow, s.firstMs = stmt.ColumnInt64(0), stmt.ColumnInt64(1)
		return nil
	}, id)
	if err != nil {
		return s, fmt.Errorf("first row of session %s: %w", id, err)
	}
	err = exec(conn, qSessionLast, func(stmt *sqlite.Stmt) error {
		s.lastRow, s.lastMs = stmt.ColumnInt64(0), stmt.ColumnInt64(1)
		return nil
	}, id)
	if err != nil {
		return s, fmt.Errorf("last row of session %s: %w", id, err)
	}
	return s, nil
}

// byStatus returns the session's counts per status, in status rank order
// (unknown statuses last, by name).
func (s sessionStats) byStatus() []named {
	return s.sum(func(r countRow) string { return r.status }, func(a, b string) int {
		ra, rb := status.Status(a).Rank(), status.Status(b).Rank()
		if ra < 0 {
			ra = 99
		}
		if rb < 0 {
			rb = 99
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a, b))
	})
}

// byChannel returns the session's counts per channel, by name.
func (s sessionStats) byChannel() []named {
	return s.sum(func(r countRow) string { return r.channel }, strings.Compare)
}

func (s sessionStats) sum(key func(countRow) string, order func(a, b string) int) []named {
	m := map[string]int64{}
	for _, r := range s.groups {
		m[key(r)] += r.n
	}
	out := make([]named, 0, len(m))
	for k, n := range m {
		out = append(out, named{k, n})
	}
	slices.SortFunc(out, func(a, b named) int { return order(a.name, b.name) })
	return out
}

// bySender returns what each sender (lower-cased role) did.
func (s sessionStats) bySender() map[string]senderStat {
	m := map[string]senderStat{}
	for _, r := range s.groups {
		k := strings.ToLower(r.sender)
		st := m[k]
		st.n += r.n
		st.maxSeq = max(st.maxSeq, r.maxSeq)
		m[k] = st
	}
	return m
}

// loadNewest runs a query that asks for limit+1 rows (its last argument),
// newest first, scanning each with scan, and returns at most limit of them
// oldest first, with more set when there were more.
func loadNewest[T any](conn *sqlite.Conn, query string, limit int, scan func(*sqlite.Stmt) T, args ...any) (out []T, more bool, err error) {
	err = exec(conn, query, func(stmt *sqlite.Stmt) error {
		out = append(out, scan(stmt))
		return nil
	}, append(args, limit+1)...)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		out, more = out[:limit], true
	}
	slices.Reverse(out)
	return out, more, nil
}

// loadMessages runs a message query through loadNewest.
func loadMessages(conn *sqlite.Conn, query string, limit int, args ...any) ([]journal.Message, bool, error) {
	return loadNewest(conn, query, limit, func(stmt *sqlite.Stmt) journal.Message {
		return journal.ScanMessage(stmt, 0)
	}, args...)
}

// signalRow is a signal with the ref of the message that resolved it.
type signalRow struct {
	journal.Signal
	resolvedRef string // "HEADER #N" of the resolving message, or ""
}

// loadSignals lists the signals query finds that the chain covers; a
// resolution the chain does not cover is not shown.
func loadSignals(conn *sqlite.Conn, cov *journal.Cover, query string, limit int, args ...any) ([]signalRow, bool, error) {
	out, more, err := loadNewest(conn, query, limit, func(stmt *sqlite.Stmt) signalRow {
		r := signalRow{Signal: journal.ScanSignal(stmt, 0)}
		r.resolvedRef = journal.Message{Header: stmt.ColumnText(journal.SignalColumnCount), Seq: stmt.ColumnInt64(journal.SignalColumnCount + 1)}.Ref()
		return r
	}, args...)
	if err == nil {
		out, err = covered(cov, out, func(s signalRow) string { return s.MessageID })
	}
	for i := range out {
		if s := &out[i]; err == nil && s.ResolvedBy != "" {
			var ok bool
			if ok, err = cov.Covers(s.ResolvedBy); !ok {
				s.ResolvedBy, s.resolvedRef = "", ""
			}
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("signals: %w", err)
	}
	return out, more, nil
}

// covered keeps the rows whose message (id) the keyed chain covers
// (journal.Cover): a signal or obligation inserted into the database
// directly, which `hm journal verify` reports, never reaches a report.
func covered[T any](cov *journal.Cover, rows []T, id func(T) string) ([]T, error) {
	out := rows[:0]
	for _, r := range rows {
		ok, err := cov.Covers(id(r))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// count runs a single-value count query.
func count(conn *sqlite.Conn, query string, args ...any) (int64, error) {
	var n int64
	err := exec(conn, query, func(stmt *sqlite.Stmt) error {
		n = stmt.ColumnInt64(0)
		return nil
	}, args...)
	return n, err
}
