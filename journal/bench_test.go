package journal_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hm/internal/ground/status"
	"hm/journal"
	"hm/journal/journaltest"

	"go.uber.org/goleak"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func benchLogger(b *testing.B) *slog.Logger {
	return slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openBench(b *testing.B, opts journal.Options) *journal.Ledger {
	b.Helper()
	opts.Logger = benchLogger(b)
	l, err := journal.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// reportLatency adds p50/p99 (µs) of lat to b.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// rawConn opens a bare connection to path (created if missing) in WAL mode
// and applies stmts (pragmas, a table), for the floor benchmarks.
func rawConn(b *testing.B, path string, stmts ...string) *sqlite.Conn {
	b.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	for _, q := range stmts {
		if err := sqlitex.ExecuteTransient(conn, q, nil); err != nil {
			b.Fatal(err)
		}
	}
	return conn
}

// rawExec runs q with args on conn or fails b.
func rawExec(b *testing.B, conn *sqlite.Conn, q string, args ...any) {
	if err := sqlitex.Execute(conn, q, &sqlitex.ExecOptions{Args: args}); err != nil {
		b.Fatalf("%s: %v", q, err)
	}
}

// batchedRate writes b.N items on conn, batch per IMMEDIATE transaction:
// item(i) for each, then done(from, to) for the batch's items before its
// COMMIT (done may be nil). It reports the cost per item (µs/<unit>) and
// the rate (<unit>s/s).
func batchedRate(b *testing.B, conn *sqlite.Conn, batch int, unit string, item func(i int), done func(from, to int)) {
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; {
		rawExec(b, conn, "BEGIN IMMEDIATE")
		from := i
		for end := min(i+batch, b.N); i < end; i++ {
			item(i)
		}
		if done != nil {
			done(from, i)
		}
		rawExec(b, conn, "COMMIT")
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/1e3/float64(b.N), "µs/"+unit)
	b.ReportMetric(float64(b.N)/el.Seconds(), unit+"s/s")
}

var benchBody = "(BUILDER #7): [ACK REQUIRED] Refactored the ledger writer; group commit drains the op channel into one IMMEDIATE transaction.\nDECISION: keep FTS off the append path"

// BenchmarkRawCommit is the floor: one INSERT per IMMEDIATE transaction on a
// bare connection with the ledger's pragmas. It reports the commit latency
// and the rate of the commits it timed (commits/s).
func BenchmarkRawCommit(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run("sync="+sync, func(b *testing.B) {
			conn := rawConn(b, filepath.Join(b.TempDir(), "raw.db"), "PRAGMA synchronous="+sync, "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, body TEXT)")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := sqlitex.Execute(conn, "BEGIN IMMEDIATE", nil); err != nil {
					b.Fatal(err)
				}
				if err := sqlitex.Execute(conn, "INSERT INTO t(k, body) VALUES (?, ?)", &sqlitex.ExecOptions{Args: []any{fmt.Sprint("k", i), benchBody}}); err != nil {
					b.Fatal(err)
				}
				if err := sqlitex.Execute(conn, "COMMIT", nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// BenchmarkRawCommitBatch64 is the batched-commit floor (#18): 64 INSERTs
// per IMMEDIATE transaction on a bare connection with synchronous=NORMAL,
// the same table as BenchmarkRawCommit. b.N counts rows; it reports the
// cost per row (µs/row) and rows/s.
func BenchmarkRawCommitBatch64(b *testing.B) {
	conn := rawConn(b, filepath.Join(b.TempDir(), "raw.db"), "PRAGMA synchronous=NORMAL", "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, body TEXT)")
	batchedRate(b, conn, 64, "row", func(i int) {
		rawExec(b, conn, "INSERT INTO t(k, body) VALUES (?, ?)", fmt.Sprint("k", i), benchBody)
	}, nil)
}

// BenchmarkAppend measures serial Append latency (nothing to batch with).
func BenchmarkAppend(b *testing.B) {
	for _, durable := range []bool{false, true} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			l := openBench(b, journal.Options{Durable: durable})
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				m := &journal.Message{MessageID: fmt.Sprint("m", i), SessionID: "app-session-1", SenderRole: "builder", TargetRole: "architect",
					Channel: "ws", Header: "BUILDER", Seq: int64(i + 1), RawBody: benchBody}
				start := time.Now()
				if _, err := l.Append(ctx, m); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkAppendParallel measures throughput with 4 concurrent appenders
// (group commit) and reports the mean number of ops per transaction.
func BenchmarkAppendParallel(b *testing.B) {
	for _, durable := range []bool{false, true} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			l := openBench(b, journal.Options{Durable: durable})
			ctx := context.Background()
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			before := l.Stats()
			const workers = 4
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					var mine []time.Duration
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							break
						}
						m := &journal.Message{MessageID: fmt.Sprint("p", i), SessionID: "app-session-1", SenderRole: "oracle", TargetRole: "architect",
							Channel: "ws", Header: "ORACLE", Seq: i, RawBody: benchBody}
						t0 := time.Now()
						if _, err := l.Append(ctx, m); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			after := l.Stats()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			if c := after.Commits - before.Commits; c > 0 {
				b.ReportMetric(float64(after.Ops-before.Ops)/float64(c), "ops/commit")
			}
			reportLatency(b, lat)
		})
	}
}

// bigLedger is a 100k-message ledger shared by the read benchmarks.
var bigLedger struct {
	once  sync.Once
	dir   string
	path  string
	bytes int64
	genS  float64
	err   error
}

const bigN = 100_000

func bigLedgerPath(b *testing.B) string {
	bigLedger.once.Do(func() {
		dir, err := os.MkdirTemp("", "hm-journal-bench-")
		if err != nil {
			bigLedger.err = err
			return
		}
		bigLedger.dir = dir
		bigLedger.path = filepath.Join(dir, "ledger.db")
		ctx := context.Background()
		l, err := journal.Open(ctx, bigLedger.path, journal.Options{Logger: benchLogger(b), FTSInterval: time.Hour})
		if err != nil {
			bigLedger.err = err
			return
		}
		start := time.Now()
		if err := journaltest.Generate(ctx, l, bigN, 1); err != nil {
			bigLedger.err = err
			return
		}
		bigLedger.genS = time.Since(start).Seconds()
		if err := l.FlushFTS(ctx); err != nil {
			bigLedger.err = err
			return
		}
		if err := l.Close(); err != nil {
			bigLedger.err = err
			return
		}
		fi, err := os.Stat(bigLedger.path)
		if err != nil {
			bigLedger.err = err
			return
		}
		bigLedger.bytes = fi.Size()
	})
	if bigLedger.err != nil {
		b.Fatal(bigLedger.err)
	}
	return bigLedger.path
}

// TestMain fails the run if a test left a goroutine behind, then removes
// the benchmark ledger.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if bigLedger.dir != "" {
			_ = os.RemoveAll(bigLedger.dir)
		}
		os.Exit(code)
	}))
}

// BenchmarkVerify checks a 100k-message ledger (chain + bodies) and reports
// rows/s, plus the on-disk size per message (FTS index included) and the
// bulk generation rate.
func BenchmarkVerify(b *testing.B) {
	path := bigLedgerPath(b)
	l, err := journal.Open(context.Background(), path, journal.Options{Logger: benchLogger(b), ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var rows int64
	for b.Loop() {
		r, err := l.Verify(context.Background())
		if err != nil || !r.OK {
			b.Fatalf("Verify = %+v, %v", r, err)
		}
		rows += r.Events + r.Messages
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(bigLedger.bytes)/bigN, "disk-bytes/msg")
	b.ReportMetric(bigN/bigLedger.genS, "generate-msgs/s")
}

// BenchmarkSearch runs a two-term FTS query over the 100k-message ledger.
func BenchmarkSearch(b *testing.B) {
	path := bigLedgerPath(b)
	l, err := journal.Open(context.Background(), path, journal.Options{Logger: benchLogger(b), ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		hits, err := l.Search(context.Background(), "ledger AND checkpoint", 20)
		if err != nil || len(hits) == 0 {
			b.Fatalf("Search = %d hits, %v", len(hits), err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// BenchmarkLifecycleSerial is the ledger's share of #18's serial
// send→ACK (broker BenchmarkAckedLatency) without sockets or JSON: each
// message is appended (timed: the ACK waits for this commit), then marked
// delivered and acknowledged with fire-and-forget changes as the broker
// does for a listener, which commit with the next append. p50-µs is the
// Append latency.
func BenchmarkLifecycleSerial(b *testing.B) {
	l := openBench(b, journal.Options{})
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("ls-", i)
		m := &journal.Message{MessageID: id, SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
			Channel: "ws", Header: "ARCH", Seq: int64(i + 1), RawBody: fmt.Sprintf("(ARCH #%d): tests pass", i+1)}
		start := time.Now()
		if _, err := l.Append(ctx, m); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		l.AdvanceAsync(journal.Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered, Detail: map[string]any{"client": 1}})
		l.AdvanceAsync(journal.Change{MessageID: id, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked, Detail: map[string]any{"by": "builder"}})
	}
	reportLatency(b, lat)
}

// BenchmarkLifecyclePipelined is the ledger's share of #18's throughput
// row without sockets or JSON: messages are queued 64 at a time
// (AppendQueued, as the broker pipelines a streaming sender) and each
// committed one is marked delivered and acknowledged with fire-and-forget
// changes, as a listener would. msgs/s is what the writer alone sustains.
func BenchmarkLifecyclePipelined(b *testing.B) {
	l := openBench(b, journal.Options{})
	ctx := context.Background()
	const window = 64
	type queued struct {
		id   string
		wait func(context.Context) (journal.Message, error)
	}
	inflight := make([]queued, 0, window)
	before := l.Stats()
	settle := func(q queued) {
		if _, err := q.wait(ctx); err != nil {
			b.Fatal(err)
		}
		l.AdvanceAsync(journal.Change{MessageID: q.id, Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered, Detail: map[string]any{"client": 1}})
		l.AdvanceAsync(journal.Change{MessageID: q.id, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked, Detail: map[string]any{"by": "builder"}})
	}
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("lp-", i)
		m := &journal.Message{MessageID: id, SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
			Channel: "ws", Header: "ARCH", Seq: int64(i + 1), RawBody: fmt.Sprintf("(ARCH #%d): tests pass", i+1)}
		wait, err := l.AppendQueued(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		inflight = append(inflight, queued{id, wait})
		if len(inflight) == window {
			settle(inflight[0])
			inflight = inflight[1:]
		}
	}
	for _, q := range inflight {
		settle(q)
	}
	if err := l.FlushFTS(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	if after := l.Stats(); after.Commits > before.Commits {
		b.ReportMetric(float64(b.N)/float64(after.Commits-before.Commits), "msgs/commit")
	}
}

// BenchmarkRowShapeFloor is the SQLite floor under #18's throughput row:
// the rows SPEC §9 makes the ledger write for one message that is
// brokered, delivered and acknowledged (its comms_journal row, three
// hash-chained comms_events rows, one state UPDATE, its comms_fts entry and
// the session counts), written with plain SQL into the ledger's own schema
// by one connection with the ledger's pragmas, 36 messages per transaction
// (the batch LifecyclePipelined reaches), hashes precomputed. The gap
// between this and LifecyclePipelined is hm's own work on the writer.
func BenchmarkRowShapeFloor(b *testing.B) {
	conn, hash := schemaConn(b)
	events := []struct{ name, detail string }{
		{"brokered", `{"ack_status":"","attempt":0,"body_hash":"` + hash + `","error_code":"","status":"brokered","updated_at_ms":1}`},
		{"delivered", `{"ack_status":"delivered.websocket","attempt":0,"client":1,"error_code":"","status":"routed","updated_at_ms":1}`},
		{"acked", `{"ack_status":"delivered.verified","attempt":0,"by":"builder","error_code":"","status":"acked","updated_at_ms":1}`},
	}
	var first, last int64
	batchedRate(b, conn, 36, "msg", func(i int) {
		id := fmt.Sprint("rs-", i)
		rawExec(b, conn, `INSERT INTO comms_journal(message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, id, "app-session-1", "architect", "builder", "ws", "outbound", i+1, "ARCH", "normal",
			1, 1, fmt.Sprintf("(ARCH #%d): tests pass", i+1), hash, 20, "brokered", "", "", 0, "{}", 1)
		last = conn.LastInsertRowID()
		if first == 0 {
			first = last
		}
		for _, e := range events {
			rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", id, e.name, 1, e.detail, hash, hash)
		}
		rawExec(b, conn, "UPDATE comms_journal SET status = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE row_id = ?", "acked", "delivered.verified", "", 0, 2, last)
	}, func(_, to int) {
		rawExec(b, conn, `INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq) VALUES (?, ?, ?, ?, ?, ?)
 ON CONFLICT(session_id, status, channel, sender_role) DO UPDATE SET n = n + excluded.n, max_seq = max(max_seq, excluded.max_seq)`,
			"app-session-1", "acked", "ws", "architect", last-first+1, to)
		rawExec(b, conn, "INSERT INTO comms_fts(rowid, raw_body) SELECT row_id, raw_body FROM comms_journal WHERE row_id >= ? AND row_id <= ? ORDER BY row_id", first, last)
		first = 0
	})
}

// schemaConn is a bare connection, with the ledger's pragmas, to a new
// ledger file holding the ledger's schema (made by journal.Open), and a
// precomputed hash for the floors' chained rows.
func schemaConn(b *testing.B) (*sqlite.Conn, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "ledger.db")
	l, err := journal.Open(context.Background(), path, journal.Options{Logger: benchLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return rawConn(b, path, "PRAGMA synchronous=NORMAL", "PRAGMA temp_store=MEMORY"), fmt.Sprintf("%064x", 0)
}

// BenchmarkSerialRowFloor is the floor of BenchmarkLifecycleSerial (the
// ledger's share of #18's serial send→ACK) in plain SQL on the ledger's
// own schema: one IMMEDIATE transaction per message, which an ACK after
// commit waits for, holding its row, its brokered event and its session
// count, and the previous message's delivered and acked events and state
// update (which commit with the next append, as in hm); hashes
// precomputed, no FTS. p50-µs is that transaction's latency.
func BenchmarkSerialRowFloor(b *testing.B) {
	conn, hash := schemaConn(b)
	brokered := `{"ack_status":"","attempt":0,"body_hash":"` + hash + `","error_code":"","status":"brokered","updated_at_ms":1}`
	delivered := `{"ack_status":"delivered.websocket","attempt":0,"client":1,"error_code":"","status":"routed","updated_at_ms":1}`
	acked := `{"ack_status":"delivered.verified","attempt":0,"by":"builder","error_code":"","status":"acked","updated_at_ms":1}`
	lat := make([]time.Duration, 0, b.N)
	var prevID string
	var prevRow int64
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("sf-", i)
		start := time.Now()
		rawExec(b, conn, "BEGIN IMMEDIATE")
		if prevID != "" {
			rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", prevID, "delivered", 1, delivered, hash, hash)
			rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", prevID, "acked", 1, acked, hash, hash)
			rawExec(b, conn, "UPDATE comms_journal SET status = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE row_id = ?", "acked", "delivered.verified", "", 0, 2, prevRow)
		}
		rawExec(b, conn, `INSERT INTO comms_journal(message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, id, "app-session-1", "architect", "builder", "ws", "outbound", i+1, "ARCH", "normal",
			1, 1, fmt.Sprintf("(ARCH #%d): tests pass", i+1), hash, 20, "brokered", "", "", 0, "{}", 1)
		prevID, prevRow = id, conn.LastInsertRowID()
		rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", id, "brokered", 1, brokered, hash, hash)
		rawExec(b, conn, `INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq) VALUES (?, ?, ?, ?, ?, ?)
 ON CONFLICT(session_id, status, channel, sender_role) DO UPDATE SET n = n + excluded.n, max_seq = max(max_seq, excluded.max_seq)`,
			"app-session-1", "brokered", "ws", "architect", 1, i+1)
		rawExec(b, conn, "COMMIT")
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// BenchmarkEventLogFloor is the floor of the leanest write path #18
// sketches: only the three hash-chained event rows of a delivered and
// acknowledged message, in a comms_events table with no index, 36 messages
// per transaction, hashes precomputed; no message row, no state, no FTS.
// comms_journal's current state (SPEC §9) would still have to be
// materialised by the same single writer, so a sustained rate cannot pass
// BenchmarkRowShapeFloor's; this shows what moving it off the hot path can
// buy at most.
func BenchmarkEventLogFloor(b *testing.B) {
	conn := rawConn(b, filepath.Join(b.TempDir(), "events.db"), "PRAGMA synchronous=NORMAL", `CREATE TABLE comms_events (event_id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,
 event TEXT NOT NULL, at_ms INTEGER NOT NULL, detail_json TEXT NOT NULL DEFAULT '{}', prev_hash TEXT NOT NULL, hash TEXT NOT NULL)`)
	hash := fmt.Sprintf("%064x", 0)
	detail := `{"ack_status":"delivered.websocket","attempt":0,"client":1,"error_code":"","status":"routed","updated_at_ms":1}`
	batchedRate(b, conn, 36, "msg", func(i int) {
		id := fmt.Sprint("el-", i)
		for _, e := range []string{"brokered", "delivered", "acked"} {
			rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", id, e, 1, detail, hash, hash)
		}
	}, nil)
}
