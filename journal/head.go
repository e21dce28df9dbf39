package journal

import (
	"context"
	"fmt"
	"time"

	"zombiezen.com/go/sqlite/sqlitex"
)

// When the chain head is signed. kv chain_head ("<event_id>:<hash>:
// <signature>", docs/ledger.md) names an event of the chain and signs it,
// so events removed from the end of a stopped ledger are found by verify.
// Rewriting it in every transaction cost each commit a page of its own
// (about 8 µs of a ~110 µs send→ACK), so the writer signs it:
//   - in a commit that adds events when the head is headEvery old or more;
//   - when it has been idle for headIdle with events the head does not
//     name yet;
//   - before a Checkpoint reads it, and when the ledger closes.
//
// A head behind the chain's end is sound (verify checks that it names an
// event of the chain with that event's hash); only the events a hub
// killed with -9 committed in its last moments, after the head, could be
// cut without the head showing it.
const (
	headEvery = 20 * time.Millisecond
	headIdle  = 5 * time.Millisecond
)

// wantHead reports whether tx, which added events (added) or not, writes
// the chain head before it commits.
func (w *writer) wantHead(tx *txn, added bool) bool {
	if tx.signHead {
		return true
	}
	return (added || w.headPending) && time.Since(w.headAt) >= headEvery
}

// writeHead signs the chain's last event (as tx leaves it) into kv.
func (tx *txn) writeHead() error {
	head := tx.mac.headValue(tx.nextEventID-1, tx.lastHash)
	if err := sqlitex.Execute(tx.conn, kvUpsert, &sqlitex.ExecOptions{Args: []any{kvChainHead, head}}); err != nil {
		return fmt.Errorf("chain head: %w", classify(err))
	}
	return nil
}

// headSigned records a committed transaction's effect on the head.
func (w *writer) headSigned(wrote, added bool) {
	switch {
	case wrote:
		w.headPending, w.headAt = false, time.Now()
	case added:
		w.headPending = true
	}
}

// signHeadIdle signs the head while the writer is idle. A failure (the
// ledger cannot commit) is retried after headRetry, warned about once.
func (w *writer) signHeadIdle() {
	o := signHeadOp()
	o.then = func(err error) {
		if err == nil {
			w.headRetryAt = time.Time{}
			return
		}
		if w.headRetryAt.IsZero() { // the first failure of a run
			w.l.log.Warn("journal: cannot sign the chain head; retrying while idle", "err", err)
		}
		w.headRetryAt = time.Now().Add(headRetry)
	}
	w.process([]*op{o})
}

// headRetry spaces an idle writer's attempts to sign the head while the
// ledger cannot commit.
const headRetry = time.Second

// signHeadOp is a transaction that only signs the head.
func signHeadOp() *op {
	return &op{kind: opTx, name: "sign chain head", apply: func(tx *txn) error {
		tx.signHead = true
		return nil
	}}
}

// signHead makes kv chain_head name the last committed event. A read-only
// ledger has no writer: its head is what the hub last signed.
func (l *Ledger) signHead(ctx context.Context) error {
	if l.opts.ReadOnly {
		return nil
	}
	return l.run(ctx, signHeadOp())
}
