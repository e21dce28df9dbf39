package journal

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"zombiezen.com/go/sqlite"
)

// FTS chunk sizes: small chunks while the writer is idle keep Append
// latency low; ticks and flushes take bigger bites so indexing keeps up
// under sustained load.
const (
	ftsIdleChunk  = 256
	ftsTickChunk  = 2048
	ftsFlushChunk = 8192
)

// ftsLoop asks the writer, at most every FTSInterval, to index newly
// committed bodies. It sleeps without a timer while every committed body
// is indexed: the writer kicks it (ftsKick) when a commit leaves bodies to
// index.
func (l *Ledger) ftsLoop(ctx context.Context) {
	defer close(l.ftsDone)
	t := time.NewTimer(l.opts.FTSInterval)
	t.Stop()
	for {
		if !l.ftsPending() {
			select {
			case <-ctx.Done():
				return
			case <-l.ftsKick:
			}
		}
		t.Reset(l.opts.FTSInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !l.ftsPending() || l.ftsQueued.Load() {
			continue
		}
		l.ftsQueued.Store(true)
		o := &op{kind: opTx, name: "fts index", apply: func(tx *txn) error {
			l.ftsQueued.Store(false)
			return tx.indexFTS(ftsTickChunk)
		}, onErr: l.ftsError}
		if !l.trySubmit(o) {
			l.ftsQueued.Store(false)
		}
	}
}

// ftsPending reports whether committed bodies wait to be indexed.
func (l *Ledger) ftsPending() bool {
	return l.committedRowID.Load() > l.indexedRowID.Load()
}

// publishRowIDs publishes the writer's committed and indexed row ids and
// wakes ftsLoop when bodies wait to be indexed.
func (l *Ledger) publishRowIDs(committed, indexed int64) {
	l.committedRowID.Store(committed)
	l.indexedRowID.Store(indexed)
	if committed > indexed {
		select {
		case l.ftsKick <- struct{}{}:
		default:
		}
	}
}

// trySubmit queues o without blocking; false if the queue is full or the
// ledger is closing.
func (l *Ledger) trySubmit(o *op) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return false
	}
	select {
	case l.ops <- o:
		return true
	default:
		return false
	}
}

// FlushFTS indexes every body committed before the call, so Search sees it.
func (l *Ledger) FlushFTS(ctx context.Context) error {
	return l.run(ctx, &op{kind: opTx, name: "fts flush", apply: func(tx *txn) error {
		for {
			before := tx.ftsRowID
			if err := tx.indexFTS(ftsFlushChunk); err != nil {
				return err
			}
			if tx.ftsRowID == before {
				return nil
			}
		}
	}})
}

// indexFTS adds up to limit not-yet-indexed bodies to comms_fts and moves
// kv fts_last_rowid.
func (tx *txn) indexFTS(limit int) error {
	from := int64(0)
	if err := tx.query("SELECT CAST(value AS INTEGER) FROM kv WHERE key = ?", func(stmt *sqlite.Stmt) error {
		from = stmt.ColumnInt64(0)
		return nil
	}, kvFTSLastRowID); err != nil {
		return fmt.Errorf("fts state: %w", err)
	}
	to := from
	if err := tx.query("SELECT coalesce(max(row_id), ?1) FROM (SELECT row_id FROM comms_journal WHERE row_id > ?1 ORDER BY row_id LIMIT ?2)", func(stmt *sqlite.Stmt) error {
		to = stmt.ColumnInt64(0)
		return nil
	}, from, limit); err != nil {
		return fmt.Errorf("fts range: %w", err)
	}
	tx.ftsRowID = to
	tx.ftsRan = true
	if to == from {
		return nil
	}
	if err := tx.exec("INSERT INTO comms_fts(rowid, raw_body) SELECT row_id, raw_body FROM comms_journal WHERE row_id > ? AND row_id <= ? ORDER BY row_id", from, to); err != nil {
		return fmt.Errorf("fts insert: %w", err)
	}
	if err := tx.exec(kvUpsert, kvFTSLastRowID, strconv.FormatInt(to, 10)); err != nil {
		return fmt.Errorf("fts state: %w", err)
	}
	tx.ftsMore = true
	return nil
}

// indexFTS runs one indexing transaction on the writer goroutine.
func (w *writer) indexFTS(limit int) {
	_, err := w.runTx([]*op{{kind: opTx, name: "fts index", apply: func(tx *txn) error {
		return tx.indexFTS(limit)
	}}})
	if err != nil {
		w.ftsWanted = false
		w.l.ftsError(err)
	}
}

// ftsError logs the first failure of a streak of indexing failures (a full
// disk would otherwise log every tick).
func (l *Ledger) ftsError(err error) {
	if !l.ftsFailing.Swap(true) {
		l.log.Warn("journal: full-text indexing failed; retrying every interval", "err", err)
	}
}
