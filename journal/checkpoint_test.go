package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpoint: a signed checkpoint kept elsewhere proves a truncation
// that the ledger alone cannot show (the ledger restored from an older
// copy, whose own head is validly signed), and an altered checkpoint or a
// rewritten chain is named.
func TestCheckpoint(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "runtime")
	path := filepath.Join(dir, "evidence-ledger.db")
	l := openAt(t, path, Options{})
	writeSome(t, l, "m", 2)
	l.Close()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	writeSome(t, l, "n", 2)
	cp, err := l.Checkpoint(ctxT(t))
	if err != nil || cp.Events != 8 || cp.LastEventID != 8 || cp.KeyID == "" {
		t.Fatalf("Checkpoint = %+v, %v", cp, err)
	}
	data, _ := json.Marshal(cp)
	parsed, err := ParseCheckpoint(data)
	if err != nil || parsed != cp {
		t.Fatalf("ParseCheckpoint = %+v, %v", parsed, err)
	}
	writeSome(t, l, "o", 1)
	if r, err := l.VerifyWith(ctxT(t), VerifyOptions{Checkpoint: &cp}); err != nil || !r.OK || r.Checkpoint != "ok" {
		t.Fatalf("VerifyWith(checkpoint) = %+v, %v", r, err)
	}
	altered := cp
	altered.Events, altered.LastEventID = 9, 9
	if r, _ := l.VerifyWith(ctxT(t), VerifyOptions{Checkpoint: &altered}); r.OK || !strings.HasPrefix(r.FirstBad, "checkpoint: signature does not match") {
		t.Fatalf("altered checkpoint: %+v", r)
	}
	l.Close()

	// Restore the older copy: the ledger verifies by itself, not against
	// the checkpoint.
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{ReadOnly: true})
	if r, err := l.Verify(ctxT(t)); err != nil || !r.OK {
		t.Fatalf("restored copy by itself: %+v, %v", r, err)
	}
	r, err := l.VerifyWith(ctxT(t), VerifyOptions{Checkpoint: &cp})
	want := "comms_events: the chain ends at event_id 4 but the checkpoint recorded event_id 8: events 5..8 are missing"
	if err != nil || r.OK || !strings.HasPrefix(r.FirstBad, want) || r.Checkpoint == "ok" {
		t.Fatalf("restored copy against the checkpoint = %+v, %v; want %q", r, err, want)
	}

	if _, err := ParseCheckpoint([]byte(`{"version":1}`)); !errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("ParseCheckpoint(garbage) = %v", err)
	}
}

// TestCheckpointRewrittenChain: a chain recomputed with another key after
// the checkpoint differs at the checkpoint's head.
func TestCheckpointRewrittenChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
	l := openAt(t, path, Options{})
	writeSome(t, l, "m", 2)
	cp, err := l.Checkpoint(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	rechainUnkeyed(t, path)
	r, _ := l.VerifyWith(ctxT(t), VerifyOptions{Checkpoint: &cp})
	if r.OK || !strings.Contains(r.Checkpoint, "comms_events event_id 4: hash differs from the checkpoint") {
		t.Fatalf("VerifyWith = %+v", r)
	}
}
