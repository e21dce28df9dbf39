package journal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"hm/internal/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

type opKind int

const (
	opTx     opKind = iota // shares a group-commit transaction
	opSolo                 // runs alone in its own transaction
	opDirect               // runs on the writer conn outside any transaction
)

// op is one unit of work for the writer goroutine. apply (or direct) stores
// its results in variables captured by the closure; done receives the final
// error once the work is committed (or failed). done is nil for
// fire-and-forget ops.
type op struct {
	kind   opKind
	name   string
	apply  func(tx *txn) error
	direct func(conn *sqlite.Conn) error
	done   chan error
	// onErr, if set, handles the failure of a fire-and-forget op instead
	// of the default error log.
	onErr func(error)
	// retry marks a fire-and-forget op that is kept and committed later
	// when it fails because the ledger cannot commit (AdvanceAsync): its
	// caller has moved on and nobody else would record the change.
	retry bool
}

// maxRetries bounds the fire-and-forget ops kept for a later commit while
// the ledger cannot commit.
const maxRetries = 1 << 16

// logicalError marks an op failure that happened before the op wrote
// anything (duplicate, not found, invalid), so the rest of its batch can
// still commit.
type logicalError struct{ err error }

func (e logicalError) Error() string { return e.err.Error() }
func (e logicalError) Unwrap() error { return e.err }

func logical(err error) error { return logicalError{err} }

// writer owns the single write connection. Only its goroutine touches it.
type writer struct {
	l    *Ledger
	conn *sqlite.Conn

	lastRowID int64 // highest committed comms_journal.row_id
	ftsRowID  int64 // highest row_id indexed in comms_fts
	ftsWanted bool  // an FTS pass is in progress; continue when idle

	// Auto-checkpointing is off on the writer connection: the writer
	// checkpoints when it has been idle for idleCheckpointDelay, or after
	// maxCommitsPerCheckpoint commits under sustained load, so WAL copying
	// does not land on a random Append.
	commitsSinceCkpt int

	// retry holds fire-and-forget ops that failed because the ledger could
	// not commit; flushRetries commits them after the next successful
	// transaction.
	retry []*op
}

const (
	idleCheckpointDelay     = 50 * time.Millisecond
	maxCommitsPerCheckpoint = 500
)

func newWriter(l *Ledger, conn *sqlite.Conn) (*writer, error) {
	w := &writer{l: l, conn: conn}
	err := sqlitex.Execute(conn, "SELECT coalesce(max(row_id),0), coalesce((SELECT CAST(value AS INTEGER) FROM kv WHERE key='fts_last_rowid'),0) FROM comms_journal", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			w.lastRowID = stmt.ColumnInt64(0)
			w.ftsRowID = stmt.ColumnInt64(1)
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	l.committedRowID.Store(w.lastRowID)
	l.indexedRowID.Store(w.ftsRowID)
	return w, nil
}

// txn is the state of one write transaction, handed to op.apply.
type txn struct {
	conn        *sqlite.Conn
	nowMs       int64
	nextEventID int64
	lastHash    string
	events      []Event
	maxRowID    int64
	ftsRowID    int64
	ftsRan      bool // an FTS chunk ran in this transaction
	ftsMore     bool // ... and indexed something
}

// submit queues o for the writer. It fails with ErrClosed once Close began.
func (l *Ledger) submit(ctx context.Context, o *op) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("journal %s: %w", o.name, err)
	}
	if l.opts.ReadOnly {
		return fmt.Errorf("%w: ledger opened read-only", ErrUnavailable)
	}
	select {
	case l.ops <- o:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("journal %s: %w", o.name, ctx.Err())
	}
}

// do queues o and waits for its outcome. It reports finished=false when it
// returned before the writer was done with o (variables captured by o's
// closure must then not be read).
func (l *Ledger) do(ctx context.Context, o *op) (finished bool, err error) {
	o.done = make(chan error, 1)
	if err := l.submit(ctx, o); err != nil {
		return false, err
	}
	select {
	case err := <-o.done:
		return true, err
	case <-ctx.Done():
		return false, fmt.Errorf("journal %s: %w (the write may still commit)", o.name, ctx.Err())
	}
}

// run is do for ops without results.
func (l *Ledger) run(ctx context.Context, o *op) error {
	_, err := l.do(ctx, o)
	return err
}

func (w *writer) run() {
	defer close(w.l.writerDone)
	var pending *op
	for {
		first := pending
		pending = nil
		if first == nil {
			select {
			case first = <-w.l.ops:
			case <-w.l.stop:
				w.shutdown()
				return
			default:
				if w.ftsWanted {
					w.indexFTS(ftsIdleChunk)
					continue
				}
				var idle <-chan time.Time
				var timer *time.Timer
				if w.commitsSinceCkpt > 0 {
					timer = time.NewTimer(idleCheckpointDelay)
					idle = timer.C
				}
				select {
				case first = <-w.l.ops:
				case <-w.l.stop:
					w.shutdown()
					return
				case <-idle:
				}
				if timer != nil {
					timer.Stop()
				}
				if first == nil {
					w.requestCheckpoint()
					continue
				}
			}
		}
		batch := []*op{first}
		if first.kind == opTx {
		collect:
			for len(batch) < w.l.opts.MaxBatch {
				select {
				case o := <-w.l.ops:
					if o.kind != opTx {
						pending = o
						break collect
					}
					batch = append(batch, o)
				default:
					break collect
				}
			}
		}
		if first.kind == opTx && pending == nil && len(batch) < w.l.opts.MaxBatch && allAsync(batch) {
			batch, pending = w.linger(batch)
		}
		w.process(batch)
		if w.commitsSinceCkpt >= maxCommitsPerCheckpoint {
			w.requestCheckpoint()
		}
	}
}

// asyncLinger is how long a batch of fire-and-forget ops (AdvanceAsync)
// waits for company: nobody waits on them, so holding them briefly lets the
// next Append commit them in its transaction instead of paying a commit of
// their own.
const asyncLinger = 2 * time.Millisecond

func allAsync(batch []*op) bool {
	for _, o := range batch {
		if o.done != nil {
			return false
		}
	}
	return true
}

// linger waits up to asyncLinger for more ops to join an all-async batch,
// stopping at the first op that waits for its result (which then commits
// with the batch) or that cannot share a transaction (returned as pending).
func (w *writer) linger(batch []*op) ([]*op, *op) {
	timer := time.NewTimer(asyncLinger)
	defer timer.Stop()
	for len(batch) < w.l.opts.MaxBatch {
		select {
		case o := <-w.l.ops:
			if o.kind != opTx {
				return batch, o
			}
			batch = append(batch, o)
			if o.done != nil {
				return w.collectMore(batch)
			}
		case <-timer.C:
			return batch, nil
		case <-w.l.stop:
			return batch, nil
		}
	}
	return batch, nil
}

// collectMore adds whatever is already queued and can share the batch.
func (w *writer) collectMore(batch []*op) ([]*op, *op) {
	for len(batch) < w.l.opts.MaxBatch {
		select {
		case o := <-w.l.ops:
			if o.kind != opTx {
				return batch, o
			}
			batch = append(batch, o)
		default:
			return batch, nil
		}
	}
	return batch, nil
}

// requestCheckpoint asks the checkpointer for a PASSIVE checkpoint without
// waiting (a request already pending covers this one).
func (w *writer) requestCheckpoint() {
	w.commitsSinceCkpt = 0
	select {
	case w.l.ckptReq <- struct{}{}:
	default:
	}
}

// checkpoint copies WAL frames into the database file on the writer's own
// connection (used at shutdown for the final TRUNCATE).
func (w *writer) checkpoint(mode string) {
	w.commitsSinceCkpt = 0
	var busy, logFrames, done int64
	err := sqlitex.ExecuteTransient(w.conn, "PRAGMA wal_checkpoint("+mode+")", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			busy, logFrames, done = stmt.ColumnInt64(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)
			return nil
		},
	})
	if err != nil {
		w.l.log.Warn("journal: checkpoint failed", "mode", mode, "err", err)
		return
	}
	w.l.log.Debug("journal: checkpoint", "mode", mode, "busy", busy, "wal_frames", logFrames, "checkpointed", done)
}

// shutdown runs what is still queued, indexes the remaining bodies and
// closes the connection.
func (w *writer) shutdown() {
	var rest []*op
drain:
	for {
		select {
		case o := <-w.l.ops:
			rest = append(rest, o)
		default:
			break drain
		}
	}
	// Group-commit what is left, keeping order.
	for len(rest) > 0 {
		n := 1
		if rest[0].kind == opTx {
			for n < len(rest) && n < w.l.opts.MaxBatch && rest[n].kind == opTx {
				n++
			}
		}
		w.process(rest[:n])
		rest = rest[n:]
	}
	for w.lastRowID > w.ftsRowID {
		before := w.ftsRowID
		w.indexFTS(ftsFlushChunk)
		if w.ftsRowID == before {
			break // failing; give up, the next Open catches up
		}
	}
	w.checkpoint("TRUNCATE")
	if err := w.conn.Close(); err != nil {
		w.l.writerErr = fmt.Errorf("close ledger: %w", err)
	}
}

func (w *writer) process(batch []*op) {
	// Commits into a deleted or replaced file would vanish (watch.go).
	if err := w.l.checkFiles(); err != nil {
		w.failAll(batch, err)
		return
	}
	if batch[0].kind == opDirect {
		o := batch[0]
		err := o.direct(w.conn)
		if err != nil {
			err = fmt.Errorf("journal %s: %w", o.name, classify(err))
		}
		w.finish(o, err)
		return
	}
	errs, err := w.runTx(batch)
	if err == nil {
		if err := w.l.checkFiles(); err != nil {
			w.failAll(batch, err) // committed into a file that is gone
			return
		}
		for i, o := range batch {
			w.finish(o, errs[i])
		}
		w.flushRetries()
		return
	}
	if len(batch) == 1 {
		w.finish(batch[0], w.txError(batch[0], err))
		return
	}
	// A batch failure must not fail unrelated ops: retry one by one.
	w.l.log.Warn("journal: batch failed, retrying ops one by one", "ops", len(batch), "err", err)
	for _, o := range batch {
		errs, err := w.runTx([]*op{o})
		if err != nil {
			w.finish(o, w.txError(o, err))
			continue
		}
		w.finish(o, errs[0])
	}
}

func (w *writer) failAll(batch []*op, err error) {
	for _, o := range batch {
		w.finish(o, w.txError(o, err))
	}
}

func (w *writer) txError(o *op, err error) error {
	if !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("journal %s: %w", o.name, err)
}

// flushRetries commits the fire-and-forget ops kept while the ledger could
// not commit, now that a transaction went through; if they still fail they
// are kept for the next one.
func (w *writer) flushRetries() {
	if len(w.retry) == 0 {
		return
	}
	ops := w.retry
	w.retry = nil
	errs, err := w.runTx(ops)
	if err != nil {
		w.retry = ops
		return
	}
	for i, o := range ops {
		w.finish(o, errs[i])
	}
	w.l.log.Info("journal: writes kept while the ledger could not commit are committed", "ops", len(ops))
}

func (w *writer) finish(o *op, err error) {
	var le logicalError
	if errors.As(err, &le) {
		err = le.err
	} else if err != nil && o.done == nil && o.retry && errors.Is(err, ErrUnavailable) {
		if len(w.retry) < maxRetries {
			if len(w.retry) == 0 {
				w.l.log.Warn("journal: cannot commit; keeping async writes to retry", "op", o.name, "err", err)
			}
			w.retry = append(w.retry, o)
			return
		}
		w.l.log.Error("journal: async write dropped: too many waiting for the ledger", "op", o.name, "err", err)
		return
	}
	if o.done != nil {
		o.done <- err
		return
	}
	if err != nil && o.onErr != nil {
		o.onErr(err)
	} else if err != nil {
		w.l.log.Error("journal: async write failed", "op", o.name, "err", err)
	}
}

// runTx runs ops in one IMMEDIATE transaction. It returns the per-op logical
// errors when the transaction committed, or the error that rolled it back.
func (w *writer) runTx(ops []*op) (errs []error, err error) {
	conn := w.conn
	if err := sqlitex.Execute(conn, "BEGIN IMMEDIATE", nil); err != nil {
		return nil, fmt.Errorf("begin: %w", classify(err))
	}
	defer func() {
		if err != nil && !conn.AutocommitEnabled() {
			if rerr := sqlitex.Execute(conn, "ROLLBACK", nil); rerr != nil {
				w.l.log.Error("journal: rollback failed", "err", rerr)
			}
		}
	}()
	tx := &txn{conn: conn, nowMs: w.l.now().UnixMilli(), maxRowID: w.lastRowID, ftsRowID: w.ftsRowID}
	if err := tx.loadTail(); err != nil {
		return nil, err
	}
	firstEvent := tx.nextEventID
	errs = make([]error, len(ops))
	okCount := 0
	for i, o := range ops {
		e := o.apply(tx)
		if e == nil {
			okCount++
			continue
		}
		var le logicalError
		if !errors.As(e, &le) {
			return nil, classify(e)
		}
		errs[i] = e
	}
	if okCount == 0 {
		// Nothing to keep (a solo op may have written before failing).
		if err := sqlitex.Execute(conn, "ROLLBACK", nil); err != nil {
			return nil, fmt.Errorf("rollback: %w", err)
		}
		return errs, nil
	}
	if tx.nextEventID != firstEvent {
		head := strconv.FormatInt(tx.nextEventID-1, 10) + ":" + tx.lastHash
		if err := sqlitex.Execute(conn, kvUpsert, &sqlitex.ExecOptions{Args: []any{kvChainHead, head}}); err != nil {
			return nil, fmt.Errorf("chain head: %w", classify(err))
		}
	}
	if err := sqlitex.Execute(conn, "COMMIT", nil); err != nil {
		return nil, fmt.Errorf("commit: %w", classify(err))
	}
	w.lastRowID = tx.maxRowID
	w.ftsRowID = tx.ftsRowID
	w.commitsSinceCkpt++
	w.l.commits.Add(1)
	w.l.opsDone.Add(int64(okCount))
	w.l.committedRowID.Store(w.lastRowID)
	w.l.indexedRowID.Store(w.ftsRowID)
	if tx.ftsRan {
		w.ftsWanted = tx.ftsMore && w.lastRowID > w.ftsRowID
		w.l.ftsFailing.Store(false)
	}
	w.l.publish(tx.events)
	return errs, nil
}

const (
	kvUpsert       = "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
	kvChainHead    = "chain_head"
	kvFTSLastRowID = "fts_last_rowid"
)

func (tx *txn) loadTail() error {
	tx.nextEventID = 1
	tx.lastHash = GenesisHash
	err := sqlitex.Execute(tx.conn, "SELECT event_id, hash FROM comms_events ORDER BY event_id DESC LIMIT 1", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			tx.nextEventID = stmt.ColumnInt64(0) + 1
			tx.lastHash = stmt.ColumnText(1)
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("load chain tail: %w", classify(err))
	}
	return nil
}

// addEvent appends one hash-chained event row and queues it for subscribers.
func (tx *txn) addEvent(messageID string, name status.Event, atMs int64, detail string, row Message) error {
	id := tx.nextEventID
	hash := HashEvent(tx.lastHash, id, messageID, string(name), atMs, detail)
	stmt, err := tx.conn.Prepare("INSERT INTO comms_events(event_id, message_id, event, at_ms, detail_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return fmt.Errorf("prepare event insert: %w", err)
	}
	stmt.BindInt64(1, id)
	stmt.BindText(2, messageID)
	stmt.BindText(3, string(name))
	stmt.BindInt64(4, atMs)
	stmt.BindText(5, detail)
	stmt.BindText(6, tx.lastHash)
	stmt.BindText(7, hash)
	_, err = stmt.Step()
	if rerr := stmt.Reset(); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	tx.nextEventID++
	tx.lastHash = hash
	tx.events = append(tx.events, Event{EventID: id, MessageID: messageID, Event: name, AtMs: atMs, Detail: []byte(detail), Row: row.row()})
	return nil
}

// KVSet stores a small value (telegram offset, ...) through the writer;
// it is committed when KVSet returns. Keys used by the ledger itself
// (chain_head, fts_last_rowid) are refused with ErrInvalid.
func (l *Ledger) KVSet(ctx context.Context, key, value string) error {
	if key == kvChainHead || key == kvFTSLastRowID || key == "" {
		return fmt.Errorf("journal kv set %q: %w: reserved key", key, ErrInvalid)
	}
	return l.run(ctx, &op{kind: opTx, name: "kv set", apply: func(tx *txn) error {
		if err := sqlitex.Execute(tx.conn, kvUpsert, &sqlitex.ExecOptions{Args: []any{key, value}}); err != nil {
			return fmt.Errorf("kv set %q: %w", key, err)
		}
		return nil
	}})
}

// SetMaxBytes changes the database size cap at runtime (0 = unlimited);
// raising it lets commits that failed with ErrUnavailable succeed again.
func (l *Ledger) SetMaxBytes(ctx context.Context, n int64) error {
	return l.run(ctx, &op{kind: opDirect, name: "set max bytes", direct: func(conn *sqlite.Conn) error {
		return setMaxPages(conn, n)
	}})
}
