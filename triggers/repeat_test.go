package triggers

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestLegacyNameIDsSameMtime: a file without an id, with the same name,
// text and mtime as one processed before (cp -p, touch -r) and on the
// inode that one freed, is a new message with a new id, in the same run
// and after a restart of the watcher (a new hub). The file system reuses a
// freed inode at will; the test makes it certain by keeping the first
// file's inode (a link made by the sink) and renaming it back.
func TestLegacyNameIDsSameMtime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		restart bool
	}{
		{"one watcher", false},
		{"a new watcher for each file", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			keep := filepath.Join(t.TempDir(), "kept")
			rec := &recorder{}
			var lastClaim time.Time // the change time the last claim gave its file
			sink := func(ctx context.Context, f File) error {
				claimed := filepath.Join(dir, ClaimedDir, f.Name)
				lastClaim = ctimeOf(t, claimed)
				if err := os.Link(claimed, keep); err != nil {
					return err
				}
				return rec.sink(ctx, f)
			}
			var r *running
			start := func() {
				w := NewWatcher(dir, sink, Options{Logger: testLogger(t)})
				r = startWatcher(t, w)
				waitStarted(t, w)
			}
			start()
			for i := 1; i <= 3; i++ {
				if tc.restart && i > 1 {
					r.stop()
					start()
				}
				waitClockPast(t, dir, lastClaim)
				src := keep // the inode, text and mtime of the file before
				if i == 1 {
					src = filepath.Join(dir, ".architect.txt.tmp")
					if err := os.WriteFile(src, []byte("yes"), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Chtimes(src, mt, mt); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Rename(src, filepath.Join(dir, "architect.txt")); err != nil {
					t.Fatal(err)
				}
				poll.For(t, 10*time.Second, func() error {
					if n := rec.count(); n != i {
						return poll.Want(false, "file %d processed, have %d", i, n)
					}
					return poll.Want(len(listDir(t, filepath.Join(dir, ClaimedDir))) == 0, "file %d deleted", i)
				})
			}
			r.stop()
			seen := map[string]bool{}
			for _, f := range rec.got() {
				if seen[f.MessageID] {
					t.Errorf("id %s given to two files: %+v", f.MessageID, rec.got())
				}
				seen[f.MessageID] = true
			}
		})
	}
}

// waitClockPast waits until a file created in dir gets a change time after
// t: the file system's clock has moved on from a claim made at t.
func waitClockPast(tb testing.TB, dir string, t time.Time) {
	tb.Helper()
	if t.IsZero() {
		return
	}
	probe := filepath.Join(dir, ".probe")
	poll.For(tb, 10*time.Second, func() error {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			return err
		}
		defer os.Remove(probe)
		now := ctimeOf(tb, probe)
		return poll.Want(now.After(t), "file system clock %v not past %v", now, t)
	})
}

// ctimeOf is path's change time.
func ctimeOf(tb testing.TB, path string) time.Time {
	tb.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		tb.Fatal(err)
	}
	in, ok := statInode(fi)
	if !ok {
		tb.Fatalf("%s: no inode information", path)
	}
	return in.ctime
}
