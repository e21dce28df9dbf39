package journal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// headLedger makes a root with a ledger at runtime/ and its head file at
// handoffs/, as a hub lays them out.
func headLedger(t *testing.T) (path string, opts Options) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "handoffs"), 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "runtime", "evidence-ledger.db"), Options{HeadPath: filepath.Join(dir, "handoffs", "ledger-checkpoint.json")}
}

func readHead(t *testing.T, path string) Checkpoint {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := ParseCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// verifyAt verifies the ledger at path as `hm journal verify` does beside
// it (read-only, with the head file).
func verifyAt(t *testing.T, path string, opts Options) VerifyReport {
	t.Helper()
	opts.ReadOnly = true
	l := openAt(t, path, opts)
	defer l.Close()
	r, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHeadFileRollback: the writer keeps its signed head outside the
// database (HeadPath). A ledger put back to an older copy (its files
// deleted, a backup restored: every row in it genuinely signed) fails
// Verify naming the events missing; a hub started on it keeps the head it
// does not hold aside instead of overwriting it, so Verify still fails
// after the chain grew again, until that kept head is removed. Before the
// fix Verify said ok.
func TestHeadFileRollback(t *testing.T) {
	t.Parallel()
	path, opts := headLedger(t)
	l := openAt(t, path, opts)
	writeSome(t, l, "m", 2) // events 1..4
	l.Close()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, opts)
	writeSome(t, l, "n", 2) // events 5..8
	l.Close()
	if cp := readHead(t, opts.HeadPath); cp.LastEventID != 8 {
		t.Fatalf("the head file names event %d after a close, want 8", cp.LastEventID)
	}
	if r := verifyAt(t, path, opts); !r.OK || r.Checkpoint != "ok" {
		t.Fatalf("Verify of the intact ledger against its head file = %+v", r)
	}

	for _, s := range []string{"-wal", "-shm"} {
		os.Remove(path + s)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	r := verifyAt(t, path, opts)
	want := "comms_events: the chain ends at event_id 4 but the last signed head (" + opts.HeadPath
	if r.OK || !strings.HasPrefix(r.FirstBad, want) || !strings.Contains(r.FirstBad, "events 5..8 are missing") {
		t.Fatalf("Verify of the rolled-back ledger = %+v, want %q ... events 5..8 are missing", r, want)
	}

	// A hub starts on it and writes more: events 5..10 are not the ones
	// the kept head names.
	l = openAt(t, path, opts)
	aside, _ := filepath.Glob(headAsideGlob(opts.HeadPath))
	if len(aside) != 1 {
		t.Fatalf("the head the ledger does not hold was not kept aside: %v", aside)
	}
	writeSome(t, l, "o", 3)
	l.Close()
	r = verifyAt(t, path, opts)
	if r.OK || !strings.Contains(r.FirstBad, "event_id 8: hash differs from the head kept aside when the hub started on a ledger without it ("+aside[0]) {
		t.Fatalf("Verify after the rolled-back ledger grew again = %+v", r)
	}
	// The operator accepts the loss by removing the kept head.
	if err := os.Remove(aside[0]); err != nil {
		t.Fatal(err)
	}
	if r := verifyAt(t, path, opts); !r.OK {
		t.Fatalf("Verify once the kept head is removed = %+v", r)
	}
}

// TestHeadFileAtOpen: a writer opening the ledger leaves a head file the
// ledger holds in place, and keeps aside one it does not hold (shorter,
// diverged, altered, another key's, not a checkpoint).
func TestHeadFileAtOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		head  func(key *ledgerKey, cp Checkpoint) []byte
		aside bool
	}{
		{"held", func(_ *ledgerKey, cp Checkpoint) []byte { return marshal(t, cp) }, false},
		{"shorter", func(k *ledgerKey, cp Checkpoint) []byte {
			return marshal(t, newChainMAC(k).checkpoint(cp.LastEventID+3, cp.HeadHash, cp.AtMs))
		}, true},
		{"diverged", func(k *ledgerKey, cp Checkpoint) []byte {
			return marshal(t, newChainMAC(k).checkpoint(cp.LastEventID, strings.Repeat("ab", 32), cp.AtMs))
		}, true},
		{"altered", func(_ *ledgerKey, cp Checkpoint) []byte { cp.AtMs++; return marshal(t, cp) }, true},
		{"another key", func(_ *ledgerKey, cp Checkpoint) []byte {
			other, err := newLedgerKey(make([]byte, KeySize))
			if err != nil {
				t.Fatal(err)
			}
			return marshal(t, newChainMAC(other).checkpoint(cp.LastEventID, cp.HeadHash, cp.AtMs))
		}, true},
		{"not a checkpoint", func(*ledgerKey, Checkpoint) []byte { return []byte("{}") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, opts := headLedger(t)
			l := openAt(t, path, opts)
			writeSome(t, l, "m", 2)
			key, err := l.ledgerKey()
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			content := tc.head(key, readHead(t, opts.HeadPath))
			if err := os.WriteFile(opts.HeadPath, content, 0o600); err != nil {
				t.Fatal(err)
			}
			l = openAt(t, path, opts)
			defer l.Close()
			aside, _ := filepath.Glob(headAsideGlob(opts.HeadPath))
			if got := len(aside) == 1; got != tc.aside {
				t.Fatalf("kept aside: %v, want %v", aside, tc.aside)
			}
			if tc.aside {
				if data, _ := os.ReadFile(aside[0]); string(data) != string(content) {
					t.Fatalf("%s holds %q, want the head file as it was", aside[0], data)
				}
				if r := verifyAt(t, path, opts); r.OK {
					t.Fatalf("Verify with a kept-aside head = %+v", r)
				}
			}
		})
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
