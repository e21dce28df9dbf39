package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// fileChanges are what an operator or a sync tool does to a ledger file
// under the running hub.
var fileChanges = []struct {
	name   string
	suffix string
	do     func(*testing.T, string)
	// aside: the file put in its place is kept as <name>.replaced-<time>.
	aside bool
}{
	{"database deleted", "", removeFile, false},
	{"WAL deleted", "-wal", removeFile, false},
	{"database replaced", "", replaceFile, true},
	{"WAL replaced", "-wal", replaceFile, true},
	{"database renamed away", "", renameAway, false},
	{"WAL renamed away", "-wal", renameAway, false},
}

func removeFile(t *testing.T, path string) {
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// replaceFile moves another file over path, as a sync tool restoring a copy does.
func replaceFile(t *testing.T, path string) {
	other := path + ".new"
	if err := os.WriteFile(other, []byte("not the ledger"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
}

func renameAway(t *testing.T, path string) {
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerFilesRecreated: the database or its WAL deleted, replaced or
// renamed away under a running ledger: the writer re-creates the files
// under the ledger's name from its open connection, so every message
// committed before (the ones only the lost WAL held included) and after is
// in the files a restarted hub opens, the chain verifies, and a file put in
// the ledger's place is kept aside. Before the fix every later Append was
// refused and the commits the deleted WAL held were gone.
func TestLedgerFilesRecreated(t *testing.T) {
	t.Parallel()
	for _, tc := range fileChanges {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "evidence-ledger.db")
			l := openAt(t, path, Options{})
			var ids []string
			appendN := func(prefix string, n int) {
				t.Helper()
				for i := range n {
					id := fmt.Sprintf("%s-%d", prefix, i)
					if _, err := l.Append(ctx, msg(id, "architect", "builder", int64(len(ids)+1), "x")); err != nil {
						t.Fatalf("Append %s after the %s: %v", id, tc.name, err)
					}
					ids = append(ids, id)
				}
			}
			appendN("before", 20)
			tc.do(t, path+tc.suffix)
			appendN("after", 20)
			// Renamed away, the file keeps its name elsewhere and the
			// commits (the descriptor check cannot tell): the path check
			// of the watch loop re-creates the ledger's.
			poll.For(t, 30*time.Second, func() error { return l.Health() })
			appendN("recreated", 5)
			assertLedgerHolds(t, path, ids)
			if tc.aside {
				got, _ := filepath.Glob(path + tc.suffix + ".replaced-*")
				if len(got) != 1 {
					t.Fatalf("the file put in place of %s was not kept aside: %v", tc.suffix, got)
				}
				if data, _ := os.ReadFile(got[0]); string(data) != "not the ledger" {
					t.Fatalf("%s holds %q", got[0], data)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatalf("Close after the files were re-created: %v", err)
			}
			assertLedgerHolds(t, path, ids)
		})
	}
}

// assertLedgerHolds opens the ledger at path as a restarted hub's readers
// would (a new open of the files under that name) and checks that every id
// is there and the chain verifies.
func assertLedgerHolds(t *testing.T, path string, ids []string) {
	t.Helper()
	r, err := Open(context.Background(), path, Options{ReadOnly: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("open the ledger under its name: %v", err)
	}
	defer r.Close()
	var missing []string
	for _, id := range ids {
		if _, err := r.Get(context.Background(), id); err != nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d committed messages are not in the files under the ledger's name: %v", len(missing), len(ids), missing)
	}
	if rep, err := r.Verify(context.Background()); err != nil || !rep.OK {
		t.Fatalf("Verify of the re-created ledger = %+v, %v", rep, err)
	}
}

// TestLedgerFilesRecreatedIdle: the watch loop notices a deletion while
// nothing is written and has the writer re-create the files, so what only
// the deleted WAL held survives although no write followed. It is told of
// the deletion by the directory's notification, with no poll; where that
// is not available it polls.
func TestLedgerFilesRecreatedIdle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{name: "notified", opts: Options{filePoll: time.Hour}},
		{name: "polled", opts: Options{noNotify: true, filePoll: 20 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "evidence-ledger.db")
			l := openAt(t, path, tc.opts)
			var ids []string
			for i := range 10 {
				id := fmt.Sprintf("idle-%d", i)
				if _, err := l.Append(ctx, msg(id, "architect", "builder", int64(i+1), "x")); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			// Let the writer's own work after those commits (its idle
			// checkpoint, which checks the files too) pass.
			time.Sleep(time.Second)
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 30*time.Second, func() error {
				if _, err := os.Stat(path + "-wal"); err != nil {
					return err
				}
				return l.Health()
			})
			assertLedgerHolds(t, path, ids)
		})
	}
}

// TestLedgerFilesNotRecreatable: while the files cannot be re-created
// (here the copy's name is taken by a directory), every write is refused
// with ErrFilesGone, which is ErrUnavailable, and nothing is acknowledged;
// once the obstacle is gone the writer re-creates them and accepts writes
// again, with nothing lost.
func TestLedgerFilesNotRecreatable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "evidence-ledger.db")
	l := openAt(t, path, Options{})
	if _, err := l.Append(ctx, msg("kept", "architect", "builder", 1, "x")); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(path+recoverSuffix, "x")
	if err := os.MkdirAll(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := l.Append(ctx, msg(fmt.Sprintf("refused-%d", i), "architect", "builder", int64(2+i), "y"))
		// "was deleted", or "was replaced" once a connection of the
		// ledger's own (a reader, the checkpoint) made SQLite open a new
		// -wal at the path: both are the files gone.
		if !errors.Is(err, ErrFilesGone) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "was deleted") && !strings.Contains(err.Error(), "was replaced") {
			t.Fatalf("Append while the files cannot be re-created = %v, want ErrFilesGone", err)
		}
	}
	if err := l.Health(); !errors.Is(err, ErrFilesGone) {
		t.Fatalf("Health = %v, want ErrFilesGone", err)
	}
	if err := os.RemoveAll(path + recoverSuffix); err != nil {
		t.Fatal(err)
	}
	var err error
	poll.For(t, 30*time.Second, func() error {
		_, err = l.Append(ctx, msg("accepted", "architect", "builder", 9, "z"))
		return err
	})
	assertLedgerHolds(t, path, []string{"kept", "accepted"})
	r, _ := Open(ctx, path, Options{ReadOnly: true, Logger: testLogger(t)})
	defer r.Close()
	for i := range 3 {
		if _, err := r.Get(ctx, fmt.Sprintf("refused-%d", i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("refused-%d is in the ledger (%v): a refused write must not be there", i, err)
		}
	}
}
