package journal

import (
	"context"
	"errors"
	"fmt"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Write transactions: how a batch of ops commits (runTx), what becomes of
// each op's outcome, and the event rows every change appends to the chain.

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
	signHead    bool // write the chain head whatever its age (head.go)
	mac         *chainMAC
	counts      map[countKey]*countDelta // summed session-count changes (counts.go)
	rows        *txRowSet                // rows read or written (rows.go)
	dropped     []string                 // message ids of rows deleted
	cache       *rowCache                // the writer's committed rows
	dirty       []Message                // flushRows' scratch, reused
	scratch     []byte                   // an event detail being encoded
	hot         *hotStmts                // the writer's statements (stmts.go)
}

// process runs a batch, answers its ops, then writes the head it signed
// outside the database (headfile.go).
func (w *writer) process(batch []*op) {
	w.processBatch(batch)
	w.writeHeadFile()
}

func (w *writer) processBatch(batch []*op) {
	// Commits into a deleted or replaced file would vanish (watch.go): a
	// transaction's files are checked once it committed, before any op
	// hears of it (re-created with what they held, recover.go); a direct
	// op, which reports at once, before it runs.
	if p := w.l.files.err.Load(); p != nil {
		w.failAll(batch, *p) // already known gone
		return
	}
	if batch[0].kind == opDirect {
		if err := w.filesOK(batch[0].checkPaths); err != nil {
			w.failAll(batch, err)
			return
		}
		o := batch[0]
		err := o.direct(w.conn)
		if err != nil {
			err = fmt.Errorf("journal %s: %w", o.name, classify(err))
		}
		w.finish(o, err)
		return
	}
	errs, err := w.runTx(batch)
	if errors.Is(err, ErrFilesGone) { // found before the commit: rolled back
		if err = w.filesOK(false); err == nil {
			errs, err = w.runTx(batch)
		}
		if errors.Is(err, ErrFilesGone) {
			w.failAll(batch, err)
			return
		}
	}
	if err == nil {
		if err := w.filesOK(false); err != nil {
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
	if o.then != nil {
		o.then(err)
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
	if conn == nil { // lost with the ledger's files (recover.go)
		return nil, w.l.failFiles(ErrFilesGone)
	}
	if err := w.hot.run(conn, stmtBegin); err != nil {
		return nil, fmt.Errorf("begin: %w", classify(err))
	}
	defer func() {
		if err != nil && !conn.AutocommitEnabled() {
			if rerr := sqlitex.Execute(conn, "ROLLBACK", nil); rerr != nil {
				w.l.log.Error("journal: rollback failed", "err", rerr)
			}
		}
	}()
	if err := w.foreignCommits(conn); err != nil {
		return nil, err
	}
	w.txRows.reset() // one set for every transaction's rows
	// The events and scratch slices are the writer's too: publish copies
	// each event into the subscribers' channels before the next
	// transaction reuses them.
	tx := &txn{conn: conn, nowMs: w.l.now().UnixMilli(), maxRowID: w.lastRowID, ftsRowID: w.ftsRowID, mac: w.mac, cache: w.rows, rows: w.txRows, hot: &w.hot,
		events: w.txEvents[:0], dirty: w.txDirty[:0]}
	defer func() { w.txEvents, w.txDirty = tx.events[:0], tx.dirty[:0] }()
	if w.tailKnown {
		tx.nextEventID, tx.lastHash = w.tailNext, w.tailHash
	} else if err := tx.loadTail(); err != nil {
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
	if err := tx.flushRows(); err != nil {
		return nil, classify(err)
	}
	if err := tx.flushCounts(); err != nil {
		return nil, classify(err)
	}
	added := tx.nextEventID != firstEvent
	head := w.wantHead(tx, added)
	if head {
		if err := tx.writeHead(); err != nil {
			return nil, err
		}
	}
	// Not into a file deleted or replaced meanwhile: roll back, so that
	// what is refused is not in the files re-created from this connection
	// (process, recover.go).
	if err := w.l.checkFiles(); err != nil {
		return nil, err
	}
	if err := w.hot.run(conn, stmtCommit); err != nil {
		return nil, fmt.Errorf("commit: %w", classify(err))
	}
	w.committed(tx)
	w.headSigned(head, added)
	if head {
		w.headID, w.headHash, w.headFileDue = tx.nextEventID-1, tx.lastHash, true
	}
	w.tailNext, w.tailHash, w.tailKnown = tx.nextEventID, tx.lastHash, true
	w.lastRowID = tx.maxRowID
	w.ftsRowID = tx.ftsRowID
	w.commitsSinceCkpt++
	w.l.commits.Add(1)
	w.l.opsDone.Add(int64(okCount))
	w.l.publishRowIDs(w.lastRowID, w.ftsRowID)
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
	// kvLedgerKeyID is the KeyID of the key the chain is hashed with now.
	kvLedgerKeyID = "ledger_key_id"
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
func (tx *txn) addEvent(messageID string, name status.Event, atMs int64, detail string, ch *change) error {
	id := tx.nextEventID
	hash := tx.mac.event(tx.lastHash, id, messageID, string(name), atMs, detail, ch)
	stmt, err := tx.hot.get(tx.conn, stmtInsertEvent)
	if err != nil {
		return err
	}
	stmt.BindInt64(1, id)
	stmt.BindText(2, messageID)
	stmt.BindText(3, string(name))
	stmt.BindInt64(4, atMs)
	stmt.BindText(5, detail)
	stmt.BindText(6, tx.lastHash)
	stmt.BindText(7, hash)
	if err := stepOnce(stmt); err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	tx.nextEventID++
	tx.lastHash = hash
	if ch.row != nil {
		tx.events = append(tx.events, Event{EventID: id, MessageID: messageID, Event: name, AtMs: atMs, Detail: []byte(detail), Row: ch.row.row()})
	}
	return nil
}

// KVSet stores a small value (telegram offset, ...) through the writer;
// it is committed when KVSet returns. Keys used by the ledger itself
// (chain_head, fts_last_rowid, ledger_key_id) are refused with ErrInvalid.
func (l *Ledger) KVSet(ctx context.Context, key, value string) error {
	if key == kvChainHead || key == kvFTSLastRowID || key == kvLedgerKeyID || key == "" {
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
