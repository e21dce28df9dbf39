package journal

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// countsState is comms_session_counts as the reports use it: per group the
// message count (groups holding none left out) and per session and sender
// the highest seq (never below 0).
type countsState struct {
	groups map[countKey]int64
	seqs   map[[2]string]int64
}

// storedCounts reads comms_session_counts.
func storedCounts(t *testing.T, l *Ledger) countsState {
	t.Helper()
	s := countsState{groups: map[countKey]int64{}, seqs: map[[2]string]int64{}}
	err := l.Read(ctxT(t), func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT session_id, status, channel, sender_role, n, max_seq FROM comms_session_counts WHERE n <> 0", func(stmt *sqlite.Stmt) error {
			k := countKey{stmt.ColumnText(0), stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(3)}
			s.groups[k] = stmt.ColumnInt64(4)
			sk := [2]string{k.session, k.sender}
			s.seqs[sk] = max(s.seqs[sk], stmt.ColumnInt64(5))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recount counts comms_journal's rows one by one: the brute-force truth.
func recount(t *testing.T, l *Ledger) countsState {
	t.Helper()
	s := countsState{groups: map[countKey]int64{}, seqs: map[[2]string]int64{}}
	err := l.Read(ctxT(t), func(conn *sqlite.Conn) error {
		return execArgs(conn, "SELECT session_id, status, channel, sender_role, seq FROM comms_journal", func(stmt *sqlite.Stmt) error {
			k := countKey{stmt.ColumnText(0), stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(3)}
			s.groups[k]++
			sk := [2]string{k.session, k.sender}
			s.seqs[sk] = max(s.seqs[sk], stmt.ColumnInt64(4))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkCounts(t *testing.T, l *Ledger) {
	t.Helper()
	got, want := storedCounts(t, l), recount(t, l)
	if !maps.Equal(got.groups, want.groups) {
		t.Errorf("session counts differ from a recount:\n got %v\nwant %v", got.groups, want.groups)
	}
	if !maps.Equal(got.seqs, want.seqs) {
		t.Errorf("highest seqs differ from a recount:\n got %v\nwant %v", got.seqs, want.seqs)
	}
	r, err := l.Verify(ctxT(t))
	if err != nil || !r.OK {
		t.Errorf("Verify = %+v, %v", r, err)
	}
}

var (
	countStatuses = []status.Status{"", status.Recorded, status.Brokered, status.Failed, status.Routed, status.Acked}
	countAcks     = []status.Stage{status.StageNone, status.AcceptedUnverified, status.DeliveredWebSocket, status.DeliveredVerified}
)

// randomMessage is a message of one of a few sessions, senders (in two
// spellings), channels and statuses, with seqs that may be missing or
// negative.
func randomMessage(r *rand.Rand, id string) *Message {
	return &Message{
		MessageID:  id,
		SessionID:  []string{"app-session-1", "app-session-2", "app-session-10", ""}[r.IntN(4)],
		SenderRole: []string{"architect", "builder", "Builder", "user", ""}[r.IntN(5)],
		TargetRole: "oracle",
		Channel:    []string{"ws", "trigger", "telegram", ""}[r.IntN(4)],
		Header:     "H",
		Seq:        int64(r.IntN(40) - 3),
		Status:     countStatuses[r.IntN(len(countStatuses))],
		AckStatus:  countAcks[r.IntN(len(countAcks))],
		RawBody:    "body " + id,
	}
}

// TestSessionCountsRandom checks the running per-session counts against a
// brute-force recount after a random mix of appends (single, batched and
// duplicate) and status changes (forward, backward, failed→routed, ack
// only, attempts only, async, unknown ids).
func TestSessionCountsRandom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		seed uint64
		ops  int
	}{
		{"few", 1, 40},
		{"mixed", 2, 400},
		{"many", 3, 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := openTest(t, Options{})
			ctx := ctxT(t)
			r := rand.New(rand.NewPCG(tt.seed, 99))
			var ids []string
			failedToRouted := 0
			for i := range tt.ops {
				switch p := r.IntN(100); {
				case p < 30 || len(ids) == 0:
					id := fmt.Sprintf("m%d", i)
					if _, err := l.Append(ctx, randomMessage(r, id)); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, id)
				case p < 35:
					batch := make([]*Message, 1+r.IntN(5))
					for j := range batch {
						batch[j] = randomMessage(r, fmt.Sprintf("m%d-%d", i, j))
					}
					dup := r.IntN(3) == 0
					if dup { // one duplicate fails the whole batch
						batch[len(batch)-1].MessageID = ids[r.IntN(len(ids))]
					}
					err := l.AppendBatch(ctx, batch)
					if dup != (err != nil) {
						t.Fatalf("batch (duplicate %v): %v", dup, err)
					}
					if !dup {
						for _, m := range batch {
							ids = append(ids, m.MessageID)
						}
					}
				case p < 42:
					m := randomMessage(r, ids[r.IntN(len(ids))])
					if _, err := l.Append(ctx, m); !errors.Is(err, ErrDuplicate) {
						t.Fatalf("duplicate append: %v", err)
					}
				case p < 52:
					// failed, then routed: proof of delivery overwrites failed.
					id := ids[r.IntN(len(ids))]
					if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Failed, ErrorCode: "no_route"}); err != nil {
						t.Fatal(err)
					}
					m, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredWebSocket})
					if err != nil {
						t.Fatal(err)
					}
					if m.Status == status.Routed {
						failedToRouted++
					}
				case p < 57:
					if _, err := l.Advance(ctx, Change{MessageID: "unknown", Status: status.Acked}); !errors.Is(err, ErrNotFound) {
						t.Fatalf("advance unknown: %v", err)
					}
				case p < 67:
					l.AdvanceAsync(Change{MessageID: ids[r.IntN(len(ids))], Status: countStatuses[1+r.IntN(len(countStatuses)-1)]})
				default:
					c := Change{MessageID: ids[r.IntN(len(ids))], IncAttempt: r.IntN(4) == 0}
					if r.IntN(4) > 0 {
						c.Status = countStatuses[1+r.IntN(len(countStatuses)-1)]
					}
					if r.IntN(2) == 0 {
						c.AckStatus = countAcks[1+r.IntN(len(countAcks)-1)]
					}
					if _, err := l.Advance(ctx, c); err != nil {
						t.Fatal(err)
					}
				}
				if i%97 == 0 {
					checkCounts(t, l)
				}
			}
			if err := l.KVSet(ctx, "barrier", "1"); err != nil { // commits behind the async ops
				t.Fatal(err)
			}
			checkCounts(t, l)
			if tt.ops >= 400 && failedToRouted == 0 {
				t.Error("no failed→routed transition exercised")
			}
		})
	}
}

// TestSessionCountsMigration opens ledgers written before the counts
// existed (schema 2: the table dropped, the version set back) and checks
// that the migration backfills counts equal to a recount, that the writer
// keeps them from there, and that Verify agrees.
func TestSessionCountsMigration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int
		advances int
	}{
		{"empty", 0, 0},
		{"one", 1, 0},
		{"mixed", 300, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l := openAt(t, path, Options{})
			ctx := ctxT(t)
			r := rand.New(rand.NewPCG(uint64(tt.messages), 7))
			for i := range tt.messages {
				if _, err := l.Append(ctx, randomMessage(r, fmt.Sprintf("m%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			for range tt.advances {
				c := Change{MessageID: fmt.Sprintf("m%d", r.IntN(tt.messages)), Status: countStatuses[1+r.IntN(len(countStatuses)-1)]}
				if _, err := l.Advance(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			want := recount(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			downgrade(t, path)

			l = openAt(t, path, Options{})
			if got := storedCounts(t, l); !maps.Equal(got.groups, want.groups) || !maps.Equal(got.seqs, want.seqs) {
				t.Fatalf("backfilled counts = %v %v, want %v %v", got.groups, got.seqs, want.groups, want.seqs)
			}
			checkCounts(t, l)
			// The writer carries on from the backfilled counts.
			if _, err := l.Append(ctx, msg("after", "builder", "architect", 7, "after the migration")); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Advance(ctx, Change{MessageID: "after", Status: status.Failed}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Advance(ctx, Change{MessageID: "after", Status: status.Routed}); err != nil {
				t.Fatal(err)
			}
			checkCounts(t, l)
		})
	}
}

// downgrade turns the closed ledger at path into a schema-2 ledger: what
// migrations 3 (comms_session_counts), 4 (signal and obligation indexes)
// 5 (the unacked index), 7 (the stuck index) and 8 (the failed-at index)
// added is dropped, the
// version is 2.
func downgrade(t *testing.T, path string) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sqlitex.ExecuteScript(conn, `DROP TABLE comms_session_counts; DROP INDEX comms_signals_session; DROP INDEX comms_signals_decisions;
 DROP INDEX comms_signals_open; DROP INDEX comms_obligations_open_session; DROP INDEX comms_journal_unacked;
 DROP INDEX comms_journal_stuck; DROP INDEX comms_journal_failed_at; DROP INDEX comms_signals_resolved; UPDATE schema_version SET version = 2;`, nil); err != nil {
		t.Fatal(err)
	}
	var tables []string
	if err := sqlitex.ExecuteTransient(conn, "SELECT name FROM sqlite_schema WHERE name LIKE 'comms_session%' OR name IN ('comms_signals_session', 'comms_signals_decisions', 'comms_signals_open', 'comms_obligations_open_session')", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { tables = append(tables, stmt.ColumnText(0)); return nil },
	}); err != nil {
		t.Fatal(err)
	}
	if len(tables) > 0 {
		t.Fatalf("downgrade left %v", tables)
	}
	// Migration 6 (the SquidRun-compatible comms_journal) rebuilds the
	// table from itself, so it can run again on the table it made.
	if len(migrations) != 9 {
		t.Fatalf("downgrade knows migrations up to 9; update it")
	}
}

// TestCoverLooksUpResolvedByIndex: the reports' Cover reads the signals a
// covered message resolved (by resolved_by) for each message; without an
// index each look read the whole signals table (make bench: a handoff on
// 1M messages took 1.3 s, goal 300 ms).
func TestCoverLooksUpResolvedByIndex(t *testing.T) {
	l := openAt(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	conn, err := sqlite.OpenConn(l.path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var plan []string
	if err := sqlitex.ExecuteTransient(conn, "EXPLAIN QUERY PLAN SELECT signal_id FROM comms_signals WHERE resolved_by = 'm1' ORDER BY signal_id", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { plan = append(plan, stmt.ColumnText(3)); return nil },
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plan, "; "), "INDEX comms_signals_resolved") {
		t.Errorf("query plan %q does not use comms_signals_resolved", plan)
	}
}

// TestSessionCountsPassThrough: a status a message enters and leaves within
// one transaction (routed, on its way to acked, as a listener's delivery and
// ack commit together with the next append) changes no count, so its group
// is not written (#36: one statement fewer on the serial append), while the
// groups the messages end in are, and the counts still match a recount.
func TestSessionCountsPassThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		existing  bool // another message already sits in routed
		wantRoute int  // comms_session_counts rows for routed afterwards
	}{
		{"empty group", false, 0},
		{"group holding another", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := openTest(t, Options{})
			ctx := ctxT(t)
			msg := func(id string, seq int64) *Message {
				return &Message{MessageID: id, SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
					Channel: "ws", Header: "ARCH", Seq: seq, RawBody: "body " + id}
			}
			routed := Change{Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered}
			acked := Change{Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked}
			if tt.existing {
				if _, err := l.Append(ctx, msg("m0", 1)); err != nil {
					t.Fatal(err)
				}
				c := routed
				c.MessageID = "m0"
				if _, err := l.Advance(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.Append(ctx, msg("m1", 2)); err != nil {
				t.Fatal(err)
			}
			// One transaction: m1 delivered and acked, m2 appended.
			r, a := routed, acked
			r.MessageID, a.MessageID = "m1", "m1"
			ops := []*op{l.advanceOp(r, nil), l.advanceOp(a, nil), {apply: func(tx *txn) error {
				prepared := *msg("m2", 3)
				if err := l.prepareMessage(&prepared); err != nil {
					return err
				}
				_, err := tx.appendMessage(prepared)
				return err
			}}}
			if err := l.run(ctx, &op{kind: opTx, name: "pass through", apply: func(tx *txn) error {
				for _, o := range ops {
					if err := o.apply(tx); err != nil {
						return err
					}
				}
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := l.Read(ctx, func(conn *sqlite.Conn) error {
				return execArgs(conn, "SELECT count(*) FROM comms_session_counts WHERE status = ?", func(stmt *sqlite.Stmt) error {
					rows = stmt.ColumnInt(0)
					return nil
				}, string(status.Routed))
			}); err != nil {
				t.Fatal(err)
			}
			if rows != tt.wantRoute {
				t.Errorf("routed count rows = %d, want %d (a group the transaction left unchanged was written)", rows, tt.wantRoute)
			}
			checkCounts(t, l)
		})
	}
}
