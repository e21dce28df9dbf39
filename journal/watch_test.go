package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
)

// TestLedgerFilesWatched: the database or its WAL deleted or replaced
// under a running ledger stops every later commit (ErrFilesGone, which is
// ErrUnavailable) and Health reports it, also while nothing is written.
// Before the fix Append went on committing into the deleted file and
// reported success.
func TestLedgerFilesWatched(t *testing.T) {
	t.Parallel()
	replace := func(t *testing.T, path string) {
		other := path + ".new"
		if err := os.WriteFile(other, []byte("not the ledger"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	renameAway := func(t *testing.T, path string) {
		if err := os.Rename(path, path+".moved"); err != nil {
			t.Fatal(err)
		}
	}
	// commitSees: the check around each commit (an fstat of the held
	// descriptor) notices it alone, before any Health or watch-loop stat
	// of the path. A file renamed away keeps its name and its commits, so
	// only the path check notices it.
	for _, tc := range []struct {
		name       string
		suffix     string
		do         func(*testing.T, string)
		want       string
		commitSees bool
	}{
		{"database deleted", "", remove, "was deleted", true},
		{"WAL deleted", "-wal", remove, "was deleted", true},
		{"database replaced", "", replace, "replaced", true},
		{"WAL replaced", "-wal", replace, "replaced", true},
		{"database renamed away", "", renameAway, "was deleted", false},
		{"WAL renamed away", "-wal", renameAway, "was deleted", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "evidence-ledger.db")
			l := openAt(t, path, Options{})
			if _, err := l.Append(ctx, msg("before", "architect", "builder", 1, "x")); err != nil {
				t.Fatal(err)
			}
			if err := l.Health(); err != nil {
				t.Fatalf("Health of a sound ledger: %v", err)
			}
			tc.do(t, path+tc.suffix)
			if tc.commitSees {
				if _, err := l.Append(ctx, msg("first-after", "architect", "builder", 9, "z")); !errors.Is(err, ErrFilesGone) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("the first Append after the file was %s = %v, want ErrFilesGone (%s)", tc.want, err, tc.want)
				}
			}
			// Noticed without a write (the watch loop / Health stats).
			if err := l.Health(); !errors.Is(err, ErrFilesGone) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Health = %v, want ErrFilesGone (%s)", err, tc.want)
			}
			for i := range 3 {
				if _, err := l.Append(ctx, msg("after"+string(rune('a'+i)), "architect", "builder", int64(2+i), "y")); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Append after the file was %s = %v, want ErrUnavailable", tc.want, err)
				}
			}
		})
	}
}

// TestLedgerFilesWatchedIdle: the watch loop notices a deletion on its own
// (Health is sticky from then on).
func TestLedgerFilesWatchedIdle(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "evidence-ledger.db")
	l := openAt(t, path, Options{})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 5*time.Second, func() error {
		p := l.files.err.Load()
		return poll.Want(p != nil && errors.Is(*p, ErrFilesGone), "the watch loop has not noticed the deletion")
	})
}
