package triggers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// TestTransientRetry: a failing sink keeps the file, stops processing and
// retries in order at the next rescan.
func TestTransientRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	failing := true
	rec := &recorder{fail: func(f File, call int) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errors.New("journal_unavailable")
		}
		return nil
	}}
	old := time.Now().Add(-time.Hour)
	for i, name := range []string{"architect.1.txt", "architect.2.txt"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("msg %d", i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := old.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 100 * time.Millisecond})
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 3, "retries") })
	if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 1 || got[0] != "architect.1.txt" {
		t.Errorf(".claimed holds %v, want the first file only (processing paused)", got)
	}
	if got := triggerNames(t, dir); len(got) != 1 || got[0] != "architect.2.txt" {
		t.Errorf("dir holds %v, want the second file untouched", got)
	}
	if st := w.Stats(); !strings.Contains(st.LastError, "journal_unavailable") || st.Processed != 0 {
		t.Errorf("stats %+v", st)
	}
	calls := rec.callCount()
	mu.Lock()
	failing = false
	mu.Unlock()
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 2, "delivery after recovery") })
	r.stop()
	got := rec.got()
	if got[0].Content != "msg 1" || got[1].Content != "msg 2" {
		t.Errorf("order %q, %q", got[0].Content, got[1].Content)
	}
	// one failed attempt per rescan, not a busy loop
	if st := w.Stats(); uint64(calls) > st.Rescans+2 {
		t.Errorf("%d sink calls for %d rescans", calls, st.Rescans)
	}
	if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 0 {
		t.Errorf(".claimed holds %v", got)
	}
}

func readReason(t *testing.T, dir, name string) (code status.Code, text string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, RejectedDir, name+".reason"))
	if err != nil {
		t.Fatalf("reason file: %v", err)
	}
	c, text, _ := strings.Cut(strings.TrimRight(string(raw), "\n"), "\n")
	return status.Code(c), text
}

// TestRejections covers sink refusals and files refused by the watcher.
func TestRejections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		data     []byte
		code     status.Code
		contains string
	}{
		{"sink reject", "nobody.txt", []byte("hi nobody"), "invalid_target", "no such target"},
		{"owner binding", "oracle.x.txt", []byte("(BUILDER-BG-1 #1): hi"), "owner_binding_violation", "builder"},
		{"too large", "architect.big.txt", []byte(strings.Repeat("x", 5000)), status.CodeTooLarge, "4096"},
		{"empty", "architect.empty.txt", nil, status.CodeEmptyContent, "printable"},
		{"whitespace", "architect.ws.txt", []byte(" \r\n\t \n"), status.CodeEmptyContent, ""},
		{"binary controls", "architect.bin.txt", []byte{0, 1, 2, 3, 4, 0x1b, 0x7f, 0x10, 0x11}, status.CodeEmptyContent, ""},
		{"id only", "architect.id.txt", []byte("[HM-MESSAGE-ID:x]\n"), status.CodeEmptyContent, ""},
	}
	dir := t.TempDir()
	sink := func(ctx context.Context, f File) error {
		switch {
		case f.Target == "nobody":
			return Reject("invalid_target", "no such target %q", f.Target)
		case strings.HasPrefix(f.Content, "(BUILDER-BG-1"):
			return fmt.Errorf("route: %w", Reject("owner_binding_violation", "builder-bg-1 may only message builder"))
		}
		return errors.New("unexpected file " + f.Name)
	}
	w := NewWatcher(dir, sink, Options{Logger: testLogger(t), MaxBytes: 4096, Settle: 50 * time.Millisecond})
	r := startWatcher(t, w)
	for _, tc := range tests {
		writeFile(t, dir, tc.file, tc.data)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			poll.For(t, 10*time.Second, func() error {
				_, err := os.Stat(filepath.Join(dir, RejectedDir, tc.file))
				return poll.Want(err == nil, "rejected %s: %v", tc.file, err)
			})
			code, text := readReason(t, dir, tc.file)
			if code != tc.code || !strings.Contains(text, tc.contains) || text == "" {
				t.Errorf("reason %q / %q, want %q containing %q", code, text, tc.code, tc.contains)
			}
			raw, err := os.ReadFile(filepath.Join(dir, RejectedDir, tc.file))
			if err != nil || string(raw) != string(tc.data) {
				t.Errorf("rejected file changed: %q %v", raw, err)
			}
		})
	}
	// A second file of an already rejected name gets a suffix.
	writeFile(t, dir, "nobody.txt", []byte("again"))
	poll.For(t, 10*time.Second, func() error {
		_, err := os.Stat(filepath.Join(dir, RejectedDir, "nobody.txt.1"))
		return poll.Want(err == nil, "second rejection") // the reason file is written before the file moves
	})
	raw, err := os.ReadFile(filepath.Join(dir, RejectedDir, "nobody.txt"))
	if err != nil || string(raw) != "hi nobody" {
		t.Errorf("first rejected file overwritten: %q %v", raw, err)
	}
	raw, err = os.ReadFile(filepath.Join(dir, RejectedDir, "nobody.txt.1"))
	if err != nil || string(raw) != "again" {
		t.Errorf("second rejected file: %q %v", raw, err)
	}
	r.stop()
	if st := w.Stats(); st.Rejected != uint64(len(tests)+1) || st.Processed != 0 || st.Retried != 0 {
		t.Errorf("stats %+v", st)
	}
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

// TestSymlinkNotFollowed: a symlink with a trigger name never leaks the
// file it points to.
func TestSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("TOP SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "architect.pre.txt")); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 30 * time.Millisecond})
	w.injectErr = make(chan error)
	r := startWatcher(t, w)
	if err := os.Symlink(secret, filepath.Join(dir, "architect.live.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "oracle.ok.txt", []byte("fine"))
	poll.For(t, 10*time.Second, func() error {
		for _, n := range []string{"architect.pre.txt", "architect.live.txt"} {
			if _, err := os.Lstat(filepath.Join(dir, RejectedDir, n+".reason")); err != nil {
				return err
			}
		}
		return poll.Want(rec.count() >= 1, "delivery")
	})
	// a symlink that reaches .claimed/ (a crash, or a swap race) is rejected
	// unread by the next rescan (here one after a watcher error)
	if err := os.Symlink(secret, filepath.Join(dir, ClaimedDir, "architect.claimed.txt")); err != nil {
		t.Fatal(err)
	}
	w.injectErr <- errors.New("test: rescan")
	poll.For(t, 10*time.Second, func() error {
		_, err := os.Lstat(filepath.Join(dir, RejectedDir, "architect.claimed.txt.reason"))
		return poll.Want(err == nil, "claimed symlink rejected")
	})
	r.stop()
	for _, f := range rec.got() {
		if strings.Contains(f.Content, "SECRET") {
			t.Fatalf("symlink followed: %+v", f)
		}
	}
	if code, _ := readReason(t, dir, "architect.claimed.txt"); code != status.CodeNotRegular {
		t.Errorf("code %q", code)
	}
	if raw, err := os.ReadFile(secret); err != nil || string(raw) != "TOP SECRET" {
		t.Errorf("secret changed: %q %v", raw, err)
	}
}

// TestNonRegularInClaimed: a file that is not regular in .claimed/ (a crash,
// or a swap between the claim and the open) goes to rejected/ with a reason
// instead of staying there forever, and a later file of its name is
// delivered. A socket is the case the open itself fails (ENXIO).
func TestNonRegularInClaimed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		why  string // in the reason
	}{
		{"socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
		}, "socket"},
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "FIFO"},
		{"symlink", func(t *testing.T, p string) {
			if err := os.Symlink("/etc/hostname", p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := &recorder{}
			w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 30 * time.Millisecond})
			r := startWatcher(t, w)
			waitStarted(t, w)
			tc.make(t, filepath.Join(dir, ClaimedDir, "builder.txt"))
			writeFile(t, dir, "builder.txt", []byte("second message"))
			poll.For(t, 5*time.Second, func() error {
				_, err := os.Lstat(filepath.Join(dir, RejectedDir, "builder.txt.reason"))
				return poll.Want(err == nil && rec.count() == 1, "rejected (%v) and the later file delivered (%d)", err, rec.count())
			})
			r.stop()
			if code, text := readReason(t, dir, "builder.txt"); code != status.CodeNotRegular || !strings.Contains(text, tc.why) {
				t.Errorf("reason %q %q, want %q naming %q", code, text, status.CodeNotRegular, tc.why)
			}
			if got := rec.got(); got[0].Name != "builder.txt" || got[0].Content != "second message" {
				t.Errorf("delivered %+v", got[0])
			}
			if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 0 {
				t.Errorf(".claimed holds %v", got)
			}
		})
	}
}

// TestOpenFailure: an open that fails is a refusal when retrying cannot help
// (not a regular file, another user's file, a file of ours we may not read)
// and stays an error to retry otherwise. The errors are made up, so the
// permission cases run as root too.
func TestOpenFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "architect.txt")
	if err := os.WriteFile(regular, []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "builder.txt")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	fifo := filepath.Join(dir, "oracle.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := "/etc/passwd" // root's: another user's file unless we are root
	if os.Geteuid() == 0 {
		foreign = filepath.Join(dir, "user.txt")
		if err := os.WriteFile(foreign, []byte("hi"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	openErr := func(path string, errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: path, Err: errno}
	}
	tests := []struct {
		name  string
		path  string
		errno syscall.Errno
		code  status.Code // "" when the error is returned to retry
		why   string      // in the reason, or in the error returned
	}{
		{"socket", sock, syscall.ENXIO, status.CodeNotRegular, "socket"},
		{"fifo", fifo, syscall.ENXIO, status.CodeNotRegular, "FIFO"},
		{"symlink", regular, syscall.ELOOP, status.CodeNotRegular, "symbolic link"},
		{"mode 0000", regular, syscall.EACCES, status.CodeUnreadable, "may not read"},
		{"not permitted", regular, syscall.EPERM, status.CodeUnreadable, "may not read"},
		{"another user's", foreign, syscall.EACCES, status.CodeForeignOwner, "owned by uid"},
		{"too many open files", regular, syscall.EMFILE, "", "too many open files"},
		{"i/o error", regular, syscall.EIO, "", "input/output error"},
		{"gone", filepath.Join(dir, "gone.txt"), syscall.ENOENT, "", "no such file"},
		{"gone after a failed open", filepath.Join(dir, "gone.txt"), syscall.ENXIO, "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := openFailure(tc.path, openErr(tc.path, tc.errno))
			if CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("openFailure = %v (code %q), want code %q naming %q", err, CodeOf(err), tc.code, tc.why)
			}
		})
	}
}

// TestClaimedLeftovers: files a crash left in .claimed/ go first, and a
// file without an id gets the one FileID gives it before the crash.
func TestClaimedLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	claimed := filepath.Join(dir, ClaimedDir)
	if err := os.MkdirAll(claimed, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(filepath.Join(claimed, "builder.txt"), []byte("(ARCH #7): crashed mid-claim\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(claimed, "builder.txt"))
	if err != nil {
		t.Fatal(err)
	}
	leftoverID := FileID("builder.txt", fi)
	if err := os.WriteFile(filepath.Join(claimed, "oracle.hm-9-x.txt"), []byte("[HM-MESSAGE-ID:hm-9-x]\nwith id"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "architect.txt")
	if err := os.WriteFile(p, []byte("older but unclaimed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	// a stale marker from the crashed run is cleaned up
	if err := os.WriteFile(filepath.Join(dir, syncPrefix+"dead-1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 3, "all delivered") })
	r.stop()
	got := rec.got()
	if got[2].Name != "architect.txt" {
		t.Errorf("directory file delivered before leftovers: %v, %v, %v", got[0].Name, got[1].Name, got[2].Name)
	}
	for _, f := range got {
		switch f.Name {
		case "builder.txt":
			if want := leftoverID; f.MessageID != want || f.Target != "builder" {
				t.Errorf("leftover %+v, want id %s", f, want)
			}
		case "oracle.hm-9-x.txt":
			if f.MessageID != "hm-9-x" || f.Content != "with id" {
				t.Errorf("leftover %+v", f)
			}
		}
	}
	if got := listDir(t, claimed); len(got) != 0 {
		t.Errorf(".claimed holds %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, syncPrefix+"dead-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale marker kept: %v", err)
	}
}

// TestDerivedIDSurvivesRetry: a file without an id re-processed after a
// failure carries the same id both times, so the ledger can dedupe it.
func TestDerivedIDSurvivesRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	var ids []string
	sink := func(ctx context.Context, f File) error {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, f.MessageID)
		if len(ids) == 1 {
			return errors.New("committed but the reply was lost")
		}
		return nil
	}
	w := NewWatcher(dir, sink, Options{Logger: testLogger(t), Rescan: 50 * time.Millisecond})
	r := startWatcher(t, w)
	writeFile(t, dir, "oracle.txt", []byte("no id here"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Processed == 1, "second attempt") })
	r.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || !strings.HasPrefix(ids[0], "trg-") {
		t.Errorf("ids %v", ids)
	}
}

// TestClaimCollision: a new file with the name of one awaiting a retry in
// .claimed/ is not claimed over it, and both are delivered in order.
func TestClaimCollision(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	fail := true
	rec := &recorder{fail: func(f File, call int) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("down")
		}
		return nil
	}}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 50 * time.Millisecond})
	r := startWatcher(t, w)
	writeFile(t, dir, "architect.txt", []byte("first"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 1, "first failure") })
	writeFile(t, dir, "architect.txt", []byte("second"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 3, "more failures") })
	raw, err := os.ReadFile(filepath.Join(dir, ClaimedDir, "architect.txt"))
	if err != nil || string(raw) != "first" {
		t.Errorf("claimed file: %q %v", raw, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 2, "both delivered") })
	r.stop()
	got := rec.got()
	if got[0].Content != "first" || got[1].Content != "second" {
		t.Errorf("order %q %q", got[0].Content, got[1].Content)
	}
}

// TestOnlyRegularFilesRead: symlinks, FIFOs, devices and directories named
// like trigger files, hard links, and files owned by another user go to
// rejected/ with a reason, unread; they never stay in triggers/ forever.
func TestOnlyRegularFilesRead(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test makes a device node and chowns a file: run it as root (CI does)")
	}
	dir := t.TempDir()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "hub-token")
	if err := os.WriteFile(secret, []byte("(ARCH #1): TOP SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		make func(path string) error
		code status.Code
	}{
		{"architect.symlink.txt", func(p string) error { return os.Symlink(secret, p) }, status.CodeNotRegular},
		{"architect.fifo.txt", func(p string) error { return syscall.Mkfifo(p, 0o600) }, status.CodeNotRegular},
		{"architect.dev.txt", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) }, status.CodeNotRegular}, // /dev/null
		{"architect.dir.txt", func(p string) error { return os.Mkdir(p, 0o700) }, status.CodeNotRegular},
		{"architect.hardlink.txt", func(p string) error { return os.Link(secret, p) }, status.CodeLinked},
		{"architect.foreign.txt", func(p string) error {
			if err := os.WriteFile(p, []byte("(ARCH #2): from someone else"), 0o644); err != nil {
				return err
			}
			return os.Lchown(p, 65534, 65534)
		}, status.CodeForeignOwner},
	}
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: 50 * time.Millisecond, Settle: 20 * time.Millisecond})
	for i, tc := range tests {
		if i%2 == 0 { // half before Run (drain), half while it runs
			if err := tc.make(filepath.Join(dir, tc.name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := startWatcher(t, w)
	waitStarted(t, w)
	for i, tc := range tests {
		if i%2 == 1 {
			if err := tc.make(filepath.Join(dir, tc.name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeFile(t, dir, "oracle.ok.txt", []byte("fine"))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			poll.For(t, 10*time.Second, func() error {
				_, err := os.Lstat(filepath.Join(dir, RejectedDir, tc.name))
				return poll.Want(err == nil, "%s rejected: %v", tc.name, err)
			})
			if code, text := readReason(t, dir, tc.name); code != tc.code || text == "" {
				t.Errorf("reason %q %q, want %q", code, text, tc.code)
			}
		})
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() >= 1, "ok delivered") })
	r.stop()
	for _, f := range rec.got() {
		if f.Name != "oracle.ok.txt" {
			t.Errorf("delivered %+v", f)
		}
	}
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left in triggers/: %v", got)
	}
	if raw, err := os.ReadFile(secret); err != nil || string(raw) != "(ARCH #1): TOP SECRET" {
		t.Errorf("secret changed: %q %v", raw, err)
	}
}

// TestLegacyNameIDsPerFile: two <target>.txt files with the same text,
// written one after the other, are two messages with two ids; a file with
// an explicit id keeps it.
func TestLegacyNameIDsPerFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		content string
		fixedID string // "" when the id is derived per file
	}{
		{"legacy name", "architect.txt", "yes", ""},
		{"legacy name, dotted form", "architect.x.txt", "yes", ""},
		{"explicit id", "architect.y.txt", "[HM-MESSAGE-ID:fixed-1]\nyes", "fixed-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := &recorder{}
			w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
			r := startWatcher(t, w)
			waitStarted(t, w)
			for i := 1; i <= 2; i++ {
				writeFile(t, dir, tc.file, []byte(tc.content))
				poll.For(t, 10*time.Second, func() error {
					return poll.Want(w.Stats().Processed == uint64(i), "file %d processed, have %d", i, w.Stats().Processed)
				})
			}
			r.stop()
			got := rec.got()
			if len(got) != 2 || got[0].Content != "yes" || got[1].Content != "yes" {
				t.Fatalf("delivered %+v", got)
			}
			a, b := got[0].MessageID, got[1].MessageID
			if tc.fixedID != "" {
				if a != tc.fixedID || b != tc.fixedID {
					t.Errorf("ids %q %q, want %q twice", a, b, tc.fixedID)
				}
				return
			}
			if a == b || !strings.HasPrefix(a, "trg-") || !ValidMessageID(a) || !ValidMessageID(b) {
				t.Errorf("ids %q and %q: want two distinct trg- ids", a, b)
			}
		})
	}
}

// TestFileID: the derived id follows the file as claimed (name, inode,
// mtime, size, change time), not its text.
func TestFileID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "architect.txt")
	if err := os.WriteFile(p, []byte("yes"), 0o600); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	stat := func(path string) os.FileInfo {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	a := FileID("architect.txt", stat(p))
	if !strings.HasPrefix(a, "trg-") || len(a) != 4+16 || !ValidMessageID(a) {
		t.Fatalf("FileID = %q, want trg-<hex16>", a)
	}
	moved := filepath.Join(dir, "moved")
	tests := []struct {
		name   string
		change func() (string, os.FileInfo)
		same   bool
	}{
		{"looked at again (after a crash) keeps its id", func() (string, os.FileInfo) { return "architect.txt", stat(p) }, true},
		{"other name", func() (string, os.FileInfo) { return "builder.txt", stat(p) }, false},
		{"renamed again (claimed anew: the change time moves)", func() (string, os.FileInfo) {
			waitClockPast(t, dir, ctimeOf(t, p))
			if err := os.Rename(p, moved); err != nil {
				t.Fatal(err)
			}
			return "architect.txt", stat(moved)
		}, false},
		{"other mtime", func() (string, os.FileInfo) {
			if err := os.Chtimes(moved, mt, mt.Add(time.Nanosecond)); err != nil {
				t.Fatal(err)
			}
			return "architect.txt", stat(moved)
		}, false},
		{"other inode, same text", func() (string, os.FileInfo) {
			q := filepath.Join(dir, "copy")
			if err := os.WriteFile(q, []byte("yes"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(q, mt, mt); err != nil {
				t.Fatal(err)
			}
			return "architect.txt", stat(q)
		}, false},
	}
	for _, tc := range tests {
		name, fi := tc.change()
		if got := FileID(name, fi); (got == a) != tc.same {
			t.Errorf("%s: FileID = %q vs %q, same=%v", tc.name, got, a, tc.same)
		}
	}
}
