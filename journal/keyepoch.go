package journal

import (
	"encoding/json"
	"errors"
	"fmt"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
)

// Why a ledger_key event starts a new stretch of the chain (its detail
// "reason").
const (
	// keyReasonUpgrade: the ledger was written by a version without the
	// ledger key and this key file was just made: the events before are
	// checked with the old unkeyed rule (they cannot be rewritten since,
	// for the cut-over's keyed hash covers the last one).
	keyReasonUpgrade = "upgrade"
	// keyReasonUnkeyedHistory: the ledger records no key although the key
	// file existed: the events before were hashed without it by someone
	// else, so Verify reports them.
	keyReasonUnkeyedHistory = "unkeyed_history"
	// keyReasonReplaced: the recorded key is not this one (the key file
	// was lost or replaced): the events before are unverifiable with it.
	keyReasonReplaced = "key_replaced"
)

// keyDetail is the detail_json of a ledger_key event.
type keyDetail struct {
	KeyID         string `json:"key_id"`
	PreviousKeyID string `json:"previous_key_id"`
	Reason        string `json:"reason"`
	Events        int64  `json:"events_before"`
}

func parseKeyDetail(detail string) (keyDetail, bool) {
	var d keyDetail
	if err := json.Unmarshal([]byte(detail), &d); err != nil || d.KeyID == "" {
		return keyDetail{}, false
	}
	return d, true
}

// ensureKeyEpoch runs at Open, before any other write: when the chain has
// events and the key recorded in kv is not this one (or none is), it
// appends a ledger_key event hashed with this key, so the change of rule is
// itself chained; an empty ledger just records the key id.
func (w *writer) ensureKeyEpoch() error {
	recorded, found := "", false
	var lastID int64
	err := execArgs(w.conn, "SELECT (SELECT value FROM kv WHERE key = ?), (SELECT coalesce(max(event_id), 0) FROM comms_events)", func(stmt *sqlite.Stmt) error {
		found = stmt.ColumnType(0) != sqlite.TypeNull
		recorded, lastID = stmt.ColumnText(0), stmt.ColumnInt64(1)
		return nil
	}, kvLedgerKeyID)
	if err != nil {
		return fmt.Errorf("read ledger key id: %w", err)
	}
	id := w.l.key.id
	if found && recorded == id {
		return nil
	}
	d := keyDetail{KeyID: id, PreviousKeyID: recorded, Events: lastID}
	switch {
	case lastID == 0:
	case found:
		d.Reason = keyReasonReplaced
		w.l.log.Warn("journal: the ledger key is not the one the chain was hashed with (lost or replaced); events made with the old key are now unverifiable",
			"key_id", id, "previous_key_id", recorded, "events", lastID, "key", w.l.opts.KeyPath)
	case w.l.keyCreated:
		d.Reason = keyReasonUpgrade
		w.l.log.Info("journal: ledger key made; the chain is keyed from now on (earlier events keep the unkeyed rule)", "key_id", id, "events", lastID)
	default:
		d.Reason = keyReasonUnkeyedHistory
		w.l.log.Warn("journal: the ledger records no key although the key file exists; hm journal verify will report the earlier events", "key_id", id, "events", lastID)
	}
	dj, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("ledger key event: %w", err)
	}
	errs, err := w.runTx([]*op{{kind: opSolo, name: "ledger key", apply: func(tx *txn) error {
		if lastID > 0 {
			if err := tx.addEvent("", status.EventLedgerKey, tx.nowMs, string(dj), &change{}); err != nil {
				return err
			}
		}
		return tx.exec(kvUpsert, kvLedgerKeyID, id)
	}}})
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return fmt.Errorf("record ledger key: %w", err)
	}
	return nil
}
