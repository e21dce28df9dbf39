package triggers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"

	"github.com/fsnotify/fsnotify"
)

// TestDrainAtStart: files present before Run are delivered, oldest first.
func TestDrainAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	files := []struct {
		name    string
		content string
		age     time.Duration // mtime = base + age
	}{
		{"oracle.txt", "third", 3 * time.Second},
		{"architect.b.txt", "second-b", 2 * time.Second},
		{"architect.a.txt", "second-a", 2 * time.Second},
		{"builder.x.txt", "first", 1 * time.Second},
		{"all.txt", "fresh", -1}, // mtime now: settles, then delivered last
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.age >= 0 {
			mt := base.Add(f.age)
			if err := os.Chtimes(p, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Settle: 200 * time.Millisecond})
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == len(files), "all delivered") })
	r.stop()
	var order []string
	for _, f := range rec.got() {
		order = append(order, f.Content)
	}
	if want := "first second-a second-b third fresh"; strings.Join(order, " ") != want {
		t.Errorf("order %v, want %s", order, want)
	}
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

// TestIgnoredNames: files that are not trigger names are left alone, and
// .txt files whose names name no target go to rejected/ (SPEC §7: nothing is
// silently dropped), as does a directory named like a trigger file.
func TestIgnoredNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{".hidden.txt", ".architect.hm-1.txt.tmp", "architect.txt.tmp", "notes.md", "architect"}
	badNames := []string{"-x.txt", "a b.txt", "all..txt", "under_score.txt"}
	for _, n := range badNames {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("do not deliver"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("do not deliver"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.txt"), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 30 * time.Millisecond, Settle: 10 * time.Millisecond})
	r := startWatcher(t, w)
	// and some written while it runs
	writeFile(t, dir, "x.y z.txt.tmp", []byte("no"))
	if err := os.WriteFile(filepath.Join(dir, "readme"), []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "oracle.ok.txt", []byte("deliver me"))
	poll.For(t, 10*time.Second, func() error {
		n := len(listDir(t, filepath.Join(dir, RejectedDir)))
		return poll.Want(rec.count() >= 1 && n == 2*(len(badNames)+1), "delivery and %d files rejected, have %d", 2*(len(badNames)+1), n)
	})
	r.stop()
	if got := rec.got(); len(got) != 1 || got[0].Content != "deliver me" {
		t.Errorf("delivered %+v", got)
	}
	for _, n := range append(names, "readme") {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	got := listDir(t, filepath.Join(dir, RejectedDir))
	var want []string
	for _, n := range append(badNames, "folder.txt") {
		want = append(want, n, n+".reason")
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rejected: %v, want %v", got, want)
	}
}

// TestPollingOnly: without fsnotify, rescans alone deliver everything.
func TestPollingOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 30 * time.Millisecond, Settle: 20 * time.Millisecond})
	w.noNotify = true
	r := startWatcher(t, w)
	for i := range 20 {
		if _, err := Write(dir, "builder", fmt.Sprintf("p-%02d", i), fmt.Sprintf("poll %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 20, "delivery") })
	r.stop()
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

// TestOverflowRescans: a queue overflow triggers a full rescan, and files
// whose events were lost are still delivered.
func TestOverflowRescans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: time.Hour, Settle: 20 * time.Millisecond})
	w.injectErr = make(chan error)
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans == 1, "first scan") })
	// Simulate lost events: a file appears in .claimed/ without any event
	// in the watched directory.
	if err := os.WriteFile(filepath.Join(dir, ClaimedDir, "oracle.lost.txt"), []byte("lost event"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.injectErr <- fsnotify.ErrEventOverflow
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery after overflow") })
	w.injectErr <- errors.New("some watcher error")
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 3, "rescan after error") })
	r.stop()
	st := w.Stats()
	if st.Overflows != 1 || !strings.Contains(st.LastError, "some watcher error") {
		t.Errorf("stats %+v", st)
	}
}

// TestDirRecreated: the watcher recreates a removed directory and keeps
// delivering.
func TestDirRecreated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "triggers")
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 50 * time.Millisecond})
	r := startWatcher(t, w)
	waitStarted(t, w)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		_, err := os.Stat(filepath.Join(dir, ClaimedDir))
		return poll.Want(err == nil, "dir recreated")
	})
	if _, err := Write(dir, "oracle", "after", "still here"); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery") })
	r.stop()
	if got := rec.got()[0]; got.MessageID != "after" || got.Content != "still here" {
		t.Errorf("got %+v", got)
	}
}

func TestBadTxtNamesRejected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Rescan: 50 * time.Millisecond, Settle: 10 * time.Millisecond, Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	bad := []string{"builder..txt", "%2e%2e%2fx.txt", strings.Repeat("a", MaxTargetLen+1) + ".txt", "bad name.txt", "-x.TXT"}
	for _, name := range append(bad, "notes.md", "builder.tmp") {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range bad {
		poll.For(t, 10*time.Second, func() error {
			data, err := os.ReadFile(filepath.Join(dir, RejectedDir, name+".reason"))
			return poll.Want(err == nil && strings.HasPrefix(string(data), "invalid_target\n"), "%s rejected: %v", name, err)
		})
	}
	// Names that are not trigger files at all stay where they are.
	for _, name := range []string{"notes.md", "builder.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s moved: %v", name, err)
		}
	}
	if n := rec.count(); n != 0 {
		t.Errorf("%d bad-name files reached the sink", n)
	}
}

// TestNoRescanWhileWatching: while fsnotify watches the directory the
// watcher runs no periodic rescan (#36: idle means idle); files renamed
// into place and files written in place are delivered from their events
// alone, and a misnamed file is refused by a rescan scheduled for it.
func TestNoRescanWhileWatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		write     func(t *testing.T, dir string)
		delivered int
		rejected  string
		moreScans bool
	}{
		{name: "idle", write: func(*testing.T, string) {}},
		{name: "renamed into place", delivered: 1, write: func(t *testing.T, dir string) {
			if _, err := Write(dir, "builder", "r1", "renamed"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "written in place", delivered: 1, write: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "builder.inplace.txt"), []byte("in place"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "misnamed", rejected: "bad name.txt", moreScans: true, write: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "bad name.txt"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := &recorder{}
			w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 20 * time.Millisecond, Settle: 20 * time.Millisecond})
			r := startWatcher(t, w)
			waitStarted(t, w)
			tc.write(t, dir)
			poll.For(t, 10*time.Second, func() error {
				if tc.rejected != "" {
					if _, err := os.Stat(filepath.Join(dir, RejectedDir, tc.rejected+".reason")); err != nil {
						return err
					}
				}
				return poll.Want(rec.count() == tc.delivered, "%d delivered, have %d", tc.delivered, rec.count())
			})
			before := w.Stats().Rescans
			time.Sleep(300 * time.Millisecond) // fifteen Rescan periods
			after := w.Stats().Rescans
			r.stop()
			if !tc.moreScans && after != 1 {
				t.Errorf("%d rescans while watching, want only the first", after)
			}
			if after != before {
				t.Errorf("%d rescans while idle after the work was done", after-before)
			}
		})
	}
}
