package journal

import (
	"context"
	"fmt"
	"time"

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
	// then, if set, is told the outcome of a fire-and-forget op (nil once
	// committed), instead of onErr and the error log (AdvanceThen).
	then func(error)
	// retry marks a fire-and-forget op that is kept and committed later
	// when it fails because the ledger cannot commit (AdvanceAsync): its
	// caller has moved on and nobody else would record the change.
	retry bool
	// checkPaths makes the writer check the ledger's files by their
	// paths before a direct op (the watch loop's check, watch.go).
	checkPaths bool
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
	// does not land on a random Append. A PASSIVE checkpoint runs on its
	// own connection but shares the machine's cores and disk with the
	// writer: fewer, larger ones copy each hot page once for many commits.
	commitsSinceCkpt int
	// Commits between PASSIVE checkpoints, learned from their reports
	// (boundWAL).
	ckptEvery int

	// recoverAt is when the writer may try again to re-create the
	// ledger's files after an attempt that failed (recover.go).
	recoverAt time.Time

	// retry holds fire-and-forget ops that failed because the ledger could
	// not commit; flushRetries commits them after the next successful
	// transaction.
	retry []*op

	// primeDue: a checkpoint copied the whole WAL; the writer starts it
	// over when next idle (primeWAL).
	primeDue bool

	mac *chainMAC // keyed hashes of events and the chain head
	hot hotStmts  // the statements every message runs (stmts.go)

	// What the writer knows of the committed ledger while no other
	// connection commits (dataVersion, rows.go): recent rows, and the
	// chain's tail (the next event id and the last hash).
	dataVersion int64
	rows        *rowCache
	txRows      *txRowSet // the running transaction's (rows.go)
	txEvents    []Event   // the running transaction's events, for publish
	txDirty     []Message // flushRows' scratch
	tailKnown   bool
	tailNext    int64
	tailHash    string

	// The chain head (head.go): committed events it does not name yet,
	// when it was last written, and when an idle writer may try again
	// after a failed signing (zero: it has not failed).
	headPending bool
	headAt      time.Time
	headRetryAt time.Time
	// The head last signed, to write to Options.HeadPath once the ops of
	// its transaction have their answers (headfile.go).
	headID          int64
	headHash        string
	headFileDue     bool
	headFileFailing bool // the last write failed (logged once)

	// boundWAL's estimate of the frames a commit adds, from the last
	// PASSIVE checkpoint's report and the commits since.
	perCommit     int64
	reportFrames  int64 // WAL length at the last report (0 after a restart)
	reportCommits int64 // Ledger.commits at the last report
}

const (
	idleCheckpointDelay     = 50 * time.Millisecond
	maxCommitsPerCheckpoint = 2000
)

func newWriter(l *Ledger, conn *sqlite.Conn) (*writer, error) {
	w := &writer{l: l, conn: conn, mac: newChainMAC(l.key), rows: newRowCache(), txRows: newTxRowSet(), ckptEvery: maxCommitsPerCheckpoint}
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
	l.publishRowIDs(w.lastRowID, w.ftsRowID)
	if err := w.ensureKeyEpoch(); err != nil {
		return nil, err
	}
	return w, nil
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
				if w.primeDue {
					w.primeWAL()
					continue
				}
				if w.ftsWanted {
					w.indexFTS(ftsIdleChunk)
					continue
				}
				var idle <-chan time.Time
				var timer *time.Timer
				switch {
				case w.headPending:
					timer = time.NewTimer(max(headIdle, time.Until(w.headRetryAt)))
				case w.commitsSinceCkpt > 0:
					timer = time.NewTimer(w.l.idleCheckpoint())
				}
				if timer != nil {
					idle = timer.C
				}
				select {
				case first = <-w.l.ops:
				case <-w.l.stop:
					w.shutdown()
					return
				case <-idle:
				case <-w.l.ckptWhole:
					w.primeDue = true
				}
				if timer != nil {
					timer.Stop()
				}
				if first == nil && w.primeDue {
					continue
				}
				if first == nil && w.headPending && !time.Now().Before(w.headRetryAt) {
					w.signHeadIdle()
					continue
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
		w.boundWAL()
	}
}

// boundWAL keeps the WAL near maxWALFrames under sustained load. When a
// PASSIVE checkpoint reports the WAL's length, the writer estimates how
// many frames a commit adds (from the growth since the last report; a WAL
// shorter than then started over by itself after a complete checkpoint,
// and the estimate decays slowly so that such a sample does not lower it
// at once); it spaces the next checkpoints so that about maxWALFrames
// frames come between two (never more than maxCommitsPerCheckpoint
// commits), and restarts the WAL when it would pass maxWALFrames before
// the next one. Everything is copied up to that PASSIVE checkpoint, so
// RESTART on the writer's own connection waits only for readers to leave
// the WAL, and the next commit starts it from the beginning.
func (w *writer) boundWAL() {
	if frames := w.l.walFrames.Swap(0); frames > 0 {
		commits := w.l.commits.Load()
		n := max(commits-w.reportCommits, 1)
		grown := frames - w.reportFrames
		if grown <= 0 {
			grown = frames
		}
		w.perCommit = max(grown/n, w.perCommit*3/4, 1)
		w.reportFrames, w.reportCommits = frames, commits
		w.ckptEvery = int(min(max(maxWALFrames/w.perCommit, 16), maxCommitsPerCheckpoint))
		if frames+w.perCommit*int64(w.ckptEvery) > maxWALFrames {
			w.checkpoint("RESTART")
			w.reportFrames = 0
		}
	}
	if w.commitsSinceCkpt >= w.ckptEvery {
		w.requestCheckpoint()
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

// idleCheckpoint is how long the writer waits idle before it asks for a
// checkpoint: idleCheckpointDelay, unless a test set idleCkptDelay.
func (l *Ledger) idleCheckpoint() time.Duration {
	if d := time.Duration(l.idleCkptDelay.Load()); d > 0 {
		return d
	}
	return idleCheckpointDelay
}

// primeWAL starts the WAL over while the writer is idle, after a
// checkpoint (the checkpointer's PASSIVE one, or the writer's own RESTART)
// copied all of it. The first commit into a WAL started over
// writes the WAL's header and syncs it (SQLite does so in every
// synchronous mode): an fsync, 0.4-1 ms here, that otherwise lands on the
// first Append after every idle spell, the message a pane's hm-send waits
// for (#36). The commit that does it rewrites the header's application_id
// with its own value: nothing in the ledger changes, and it counts for no
// checkpoint (the frame it leaves is copied with the next ones).
func (w *writer) primeWAL() {
	w.primeDue = false
	if w.conn == nil { // lost with the ledger's files (recover.go)
		return
	}
	if err := sqlitex.ExecuteTransient(w.conn, fmt.Sprintf("PRAGMA application_id=%d", ApplicationID), nil); err != nil {
		w.l.log.Warn("journal: start the WAL over while idle", "err", err)
	}
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
	if w.conn == nil { // lost with the ledger's files (recover.go)
		return
	}
	busy, logFrames, done, err := walCheckpoint(w.conn, mode)
	if err != nil {
		w.l.log.Warn("journal: checkpoint failed", "mode", mode, "err", err)
		return
	}
	w.primeDue = w.primeDue || busy == 0 && logFrames > 0 && done == logFrames
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
	if w.headPending {
		w.process([]*op{signHeadOp()})
	}
	for w.lastRowID > w.ftsRowID {
		before := w.ftsRowID
		w.indexFTS(ftsFlushChunk)
		if w.ftsRowID == before {
			break // failing; give up, the next Open catches up
		}
	}
	w.checkpoint("TRUNCATE")
	if w.conn == nil {
		return
	}
	if err := w.conn.Close(); err != nil {
		w.l.writerErr = fmt.Errorf("close ledger: %w", err)
	}
}
