// This file keeps the signed chain head outside the database
// (Options.HeadPath; handoffs/ledger-checkpoint.json for a hub), so a
// ledger that went back in time (its files deleted, or restored from an
// older copy: everything in it genuinely signed) is found by Verify. The
// writer rewrites the file, a Checkpoint, after each commit that signs the
// head. A writer opening a ledger that does not hold the file's head keeps
// the file aside (it is the evidence) and says so; Verify checks the
// ledger against the file and every head kept aside.

package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
)

// headAsideInfix marks a head file kept aside: "<name>.rolled-back-<time>.json"
// beside HeadPath.
const headAsideInfix = ".rolled-back-"

// checkpoint signs the head (id, hash) as a Checkpoint made at atMs.
func (c *chainMAC) checkpoint(id int64, hash string, atMs int64) Checkpoint {
	cp := Checkpoint{Version: CheckpointVersion, Events: id, LastEventID: id, HeadHash: hash, AtMs: atMs, KeyID: c.key.id}
	cp.MAC = c.macHex(cp.signed())
	return cp
}

// checkpointProblem says why cp cannot vouch for this ledger's key ("" if
// it is signed with the current key). label names cp in the sentence.
func (c *chainMAC) checkpointProblem(cp *Checkpoint, label string) string {
	switch {
	case cp.KeyID != c.key.id:
		return fmt.Sprintf("%s: made with ledger key %s, not the current key %s: cannot be checked", label, cp.KeyID, c.key.id)
	case !c.matches(cp.MAC, cp.signed()):
		return fmt.Sprintf("%s: signature does not match (the checkpoint was altered)", label)
	}
	return ""
}

// headMissing says how a chain that ends at lastID, and whose event
// cp.LastEventID has hash (found: it exists), fails to hold the head cp
// records ("" if it holds it).
func headMissing(cp *Checkpoint, label string, lastID int64, hash string, found bool) string {
	switch {
	case lastID < cp.LastEventID:
		return fmt.Sprintf("comms_events: the chain ends at event_id %d but the %s recorded event_id %d: events %d..%d are missing (removed, or the ledger went back to an older copy: its files deleted or restored)",
			lastID, label, cp.LastEventID, lastID+1, cp.LastEventID)
	case cp.LastEventID == 0:
		return ""
	case !found || hash != cp.HeadHash:
		return fmt.Sprintf("comms_events event_id %d: hash differs from the %s's head (the chain was rewritten since, or went back to an older copy and grew again)", cp.LastEventID, label)
	}
	return ""
}

// headFile is a head read from a file outside the database.
type headFile struct {
	path  string
	label string // how reports name it
	cp    *Checkpoint
	err   error // the file is not a checkpoint
}

// readHeadFile reads the head at path; nil, nil when there is none. what
// says what the file is, for reports.
func readHeadFile(path, what string) (*headFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	h := &headFile{path: path, label: fmt.Sprintf("%s (%s)", what, path)}
	cp, err := ParseCheckpoint(data)
	if err != nil {
		h.err = err
		return h, nil
	}
	h.label = fmt.Sprintf("%s (%s, signed %s)", what, path, time.UnixMilli(cp.AtMs).UTC().Format(time.RFC3339))
	h.cp = &cp
	return h, nil
}

const (
	headWhat      = "last signed head"
	headAsideWhat = "head kept aside when the hub started on a ledger without it"
)

// headFiles reads the heads Verify checks the ledger against: HeadPath's,
// and every one a writer kept aside beside it. They are read before the
// snapshot Verify checks, so a head the writer signs meanwhile cannot name
// an event the snapshot lacks.
func (l *Ledger) headFiles() ([]*headFile, error) {
	if l.opts.HeadPath == "" {
		return nil, nil
	}
	var out []*headFile
	h, err := readHeadFile(l.opts.HeadPath, headWhat)
	if err != nil {
		return nil, err
	}
	if h != nil {
		out = append(out, h)
	}
	aside, err := filepath.Glob(headAsideGlob(l.opts.HeadPath))
	if err != nil {
		return nil, err
	}
	slices.Sort(aside)
	for _, p := range aside {
		h, err := readHeadFile(p, headAsideWhat)
		if err != nil {
			return nil, err
		}
		if h != nil {
			out = append(out, h)
		}
	}
	return out, nil
}

func headAsideGlob(path string) string {
	return strings.TrimSuffix(path, ".json") + headAsideInfix + "*"
}

func headAsideName(path string, at time.Time) string {
	return strings.TrimSuffix(path, ".json") + headAsideInfix + at.UTC().Format("20060102T150405.000Z") + ".json"
}

// checkHeadFile runs when a writer opens the ledger: if the ledger does
// not hold the head HeadPath records (shorter, diverged, or the file is not
// signed with this key), the file is kept aside, where Verify keeps finding
// it, instead of being overwritten by the next head, and the hub says so.
func (w *writer) checkHeadFile() error {
	l := w.l
	h, err := readHeadFile(l.opts.HeadPath, headWhat)
	if err != nil || h == nil {
		return err
	}
	problem := ""
	switch {
	case h.err != nil:
		problem = fmt.Sprintf("%s: %v", h.label, h.err)
	default:
		problem = w.mac.checkpointProblem(h.cp, h.label)
	}
	if problem == "" {
		lastID, hash, found, err := chainAt(w.conn, h.cp.LastEventID)
		if err != nil {
			return err
		}
		problem = headMissing(h.cp, h.label, lastID, hash, found)
	}
	if problem == "" {
		return nil
	}
	aside := headAsideName(h.path, l.now())
	if err := os.Rename(h.path, aside); err != nil {
		return fmt.Errorf("keep the head the ledger does not hold aside: %w", err)
	}
	l.log.Error("journal: THE LEDGER WENT BACK IN TIME: it does not hold its last signed head; hm journal verify fails until the missing events are restored or the kept head is removed (docs/ledger.md)",
		"problem", problem, "kept", aside)
	return nil
}

// chainAt returns the chain's last event id and the hash of event id.
func chainAt(conn *sqlite.Conn, id int64) (lastID int64, hash string, found bool, err error) {
	err = execArgs(conn, "SELECT coalesce(max(event_id),0), (SELECT hash FROM comms_events WHERE event_id = ?) FROM comms_events", func(stmt *sqlite.Stmt) error {
		lastID = stmt.ColumnInt64(0)
		found = stmt.ColumnType(1) != sqlite.TypeNull
		hash = stmt.ColumnText(1)
		return nil
	}, id)
	if err != nil {
		return 0, "", false, fmt.Errorf("read the chain's end: %w", err)
	}
	return lastID, hash, found, nil
}

// writeHeadFile writes the head the writer last signed to HeadPath (a
// temporary file renamed over it, so a reader sees a whole head). It is
// not synced: a head is written after its commit, and what a crash of the
// machine takes from one it takes from the other.
func (w *writer) writeHeadFile() {
	if !w.headFileDue || w.l.opts.HeadPath == "" {
		return
	}
	w.headFileDue = false
	cp := w.mac.checkpoint(w.headID, w.headHash, w.l.now().UnixMilli())
	data, err := json.MarshalIndent(cp, "", "  ")
	if err == nil {
		err = replaceUnsynced(w.l.opts.HeadPath, append(data, '\n'))
	}
	if err != nil {
		if !w.headFileFailing {
			w.l.log.Warn("journal: cannot write the signed head outside the ledger", "path", w.l.opts.HeadPath, "err", err)
		}
		w.headFileFailing = true
		return
	}
	w.headFileFailing = false
}

// replaceUnsynced writes data to a temporary dotfile beside path and renames it
// over path.
func replaceUnsynced(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
