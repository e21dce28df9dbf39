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

func benchLogger(b testing.TB) *slog.Logger {
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
func rawConn(b testing.TB, path string, stmts ...string) *sqlite.Conn {
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
func rawExec(b testing.TB, conn *sqlite.Conn, q string, args ...any) {
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

// lifecycleMessage is message i of the lifecycle benchmarks, as the
// broker appends a send (floorRows writes the same rows in plain SQL).
func lifecycleMessage(id string, i int) *journal.Message {
	return &journal.Message{MessageID: id, SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
		Channel: "ws", Header: "ARCH", Seq: int64(i + 1), RawBody: fmt.Sprintf("(ARCH #%d): tests pass", i+1)}
}

// lifecycleChanges are what the broker records once a listener has been
// sent message id and has acknowledged it.
func lifecycleChanges(id string) []journal.Change {
	return []journal.Change{
		{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered, Detail: map[string]any{"client": 1}},
		{MessageID: id, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked, Detail: map[string]any{"by": "builder"}},
	}
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
		m := lifecycleMessage(id, i)
		start := time.Now()
		if _, err := l.Append(ctx, m); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		for _, c := range lifecycleChanges(id) {
			l.AdvanceAsync(c)
		}
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
		for _, c := range lifecycleChanges(q.id) {
			l.AdvanceAsync(c)
		}
	}
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("lp-", i)
		m := lifecycleMessage(id, i)
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

// floorRows writes, in plain SQL on the ledger's own schema, the rows the
// ledger writes for one message of the lifecycle benchmarks, with values
// of the same sizes: millisecond timestamps, the event details with the
// keys and values the ledger writes, 64-hex-digit hashes (precomputed).
// A floor whose rows are smaller than the ledger's is not its floor.
type floorRows struct {
	b    testing.TB
	conn *sqlite.Conn
	hash string
	now  int64
	// The events' detail_json, as the ledger writes them (EventBrokered,
	// EventDelivered to client 1, EventAcked by builder).
	brokered, delivered, acked string
}

func newFloorRows(b testing.TB) *floorRows {
	conn, hash := schemaConn(b)
	now := time.Now().UnixMilli()
	ms := fmt.Sprint(now)
	return &floorRows{b: b, conn: conn, hash: hash, now: now,
		brokered:  `{"ack_status":"","attempt":0,"body_bytes":21,"body_hash":"` + hash + `","error_code":"","status":"brokered","updated_at_ms":` + ms + `}`,
		delivered: `{"ack_status":"delivered.websocket","attempt":0,"client":1,"error_code":"","status":"routed","updated_at_ms":` + ms + `}`,
		acked:     `{"ack_status":"delivered.verified","attempt":0,"by":"builder","error_code":"","status":"acked","updated_at_ms":` + ms + `}`,
	}
}

// insert writes message i's row and its brokered event, and returns its
// message_id and row_id.
func (f *floorRows) insert(prefix string, i int) (string, int64) {
	id := fmt.Sprint(prefix, i)
	body := fmt.Sprintf("(ARCH #%d): tests pass", i+1)
	rawExec(f.b, f.conn, `INSERT INTO comms_journal(message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, id, "app-session-1", "architect", "builder", "ws", "outbound", i+1, "ARCH", "normal",
		nil, f.now, body, f.hash, len(body), "brokered", "", "", 0, "{}", f.now)
	row := f.conn.LastInsertRowID()
	f.event(id, "brokered", f.brokered)
	return id, row
}

// settle writes a message's delivered and acked events and its state
// update.
func (f *floorRows) settle(id string, row int64) {
	f.event(id, "delivered", f.delivered)
	f.event(id, "acked", f.acked)
	rawExec(f.b, f.conn, "UPDATE comms_journal SET status = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE row_id = ?", "acked", "delivered.verified", "", 0, f.now, row)
}

func (f *floorRows) event(id, name, detail string) {
	rawExec(f.b, f.conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", id, name, f.now, detail, f.hash, f.hash)
}

// count adds n messages, the highest seq maxSeq, to a status's group.
func (f *floorRows) count(status string, n int64, maxSeq int) {
	rawExec(f.b, f.conn, `INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq) VALUES (?, ?, ?, ?, ?, ?)
 ON CONFLICT(session_id, status, channel, sender_role) DO UPDATE SET n = n + excluded.n, max_seq = max(max_seq, excluded.max_seq)`,
		"app-session-1", status, "ws", "architect", n, maxSeq)
}

// index adds rows from..to to comms_fts.
func (f *floorRows) index(from, to int64) {
	rawExec(f.b, f.conn, "INSERT INTO comms_fts(rowid, raw_body) SELECT row_id, raw_body FROM comms_journal WHERE row_id >= ? AND row_id <= ? ORDER BY row_id", from, to)
}

// BenchmarkRowShapeFloor is the SQLite floor under #18's throughput row:
// the rows SPEC §9 makes the ledger write for one message that is
// brokered, delivered and acknowledged (its comms_journal row, three
// hash-chained comms_events rows, one state UPDATE, its comms_fts entry and
// the session counts), written with plain SQL into the ledger's own schema
// by one connection with the ledger's pragmas, 36 messages per transaction
// (the batch LifecyclePipelined reaches), hashes precomputed (floorRows).
// Every row of a message is written in one transaction, which the ledger
// cannot do: its ACK follows the commit of the message's row, and the
// message is delivered only after that (BenchmarkRowShapeDeferredFloor).
func BenchmarkRowShapeFloor(b *testing.B) {
	f := newFloorRows(b)
	var first, last int64
	batchedRate(b, f.conn, 36, "msg", func(i int) {
		id, row := f.insert("rs-", i)
		f.settle(id, row)
		last = row
		if first == 0 {
			first = row
		}
	}, func(from, to int) {
		f.count("acked", last-first+1, to)
		f.index(first, last)
		first = 0
	})
}

// schemaConn is a bare connection, with the ledger's pragmas, to a new
// ledger file holding the ledger's schema (made by journal.Open), and a
// precomputed hash for the floors' chained rows.
func schemaConn(b testing.TB) (*sqlite.Conn, string) {
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

// BenchmarkRowShapeDeferredFloor is BenchmarkRowShapeFloor in the order the
// ledger must write those rows (#36): a message's row, brokered event and
// count commit first (its ACK waits for that commit); its delivered and
// acked events and state update commit in the next transaction, with the
// next batch's new rows, as in LifecyclePipelined. 32 messages per
// transaction, the batch LifecyclePipelined reaches.
func BenchmarkRowShapeDeferredFloor(b *testing.B) {
	f := newFloorRows(b)
	type row struct {
		id  string
		row int64
	}
	var prev, cur []row
	batchedRate(b, f.conn, 32, "msg", func(i int) {
		id, r := f.insert("rd-", i)
		cur = append(cur, row{id, r})
	}, func(from, to int) {
		for _, p := range prev {
			f.settle(p.id, p.row)
		}
		if len(prev) > 0 {
			f.count("brokered", -int64(len(prev)), 0)
			f.count("acked", int64(len(prev)), from)
		}
		f.count("brokered", int64(len(cur)), to)
		f.index(cur[0].row, cur[len(cur)-1].row)
		prev, cur = append(prev[:0], cur...), cur[:0]
	})
}

// BenchmarkSerialRowFloor is the floor of BenchmarkLifecycleSerial (the
// ledger's share of #18's serial send→ACK) in plain SQL on the ledger's
// own schema: one IMMEDIATE transaction per message, which an ACK after
// commit waits for, holding its row, its brokered event and its session
// count, and the previous message's delivered and acked events and state
// update (which commit with the next append, as in hm); hashes
// precomputed, no FTS (floorRows). p50-µs is that transaction's latency.
func BenchmarkSerialRowFloor(b *testing.B) {
	f := newFloorRows(b)
	lat := make([]time.Duration, 0, b.N)
	var prevID string
	var prevRow int64
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		rawExec(b, f.conn, "BEGIN IMMEDIATE")
		if prevID != "" {
			f.settle(prevID, prevRow)
		}
		prevID, prevRow = f.insert("sf-", i)
		f.count("brokered", 1, i+1)
		rawExec(b, f.conn, "COMMIT")
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
	now := time.Now().UnixMilli()
	detail := fmt.Sprintf(`{"ack_status":"delivered.websocket","attempt":0,"client":1,"error_code":"","status":"routed","updated_at_ms":%d}`, now)
	batchedRate(b, conn, 36, "msg", func(i int) {
		id := fmt.Sprint("el-", i)
		for _, e := range []string{"brokered", "delivered", "acked"} {
			rawExec(b, conn, "INSERT INTO comms_events(message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)", id, e, now, detail, hash, hash)
		}
	}, nil)
}
