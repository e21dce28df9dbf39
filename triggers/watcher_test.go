package triggers

import (
	"context"
	"errors"
	"fmt"
	"hm/internal/poll"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "triggers")
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	waitStarted(t, w)
	for _, d := range []string{dir, filepath.Join(dir, RejectedDir), filepath.Join(dir, ClaimedDir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, err %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
	before := time.Now()
	path, err := Write(dir, "Architect", "hm-42-abcdef", "(BUILDER #3): build is green")
	if err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "sink call, have %v", rec.count()) })
	poll.For(t, 10*time.Second, func() error {
		_, err := os.Stat(path)
		return poll.Want(errors.Is(err, os.ErrNotExist), "file removed")
	})
	f := rec.got()[0]
	want := File{Name: "architect.hm-42-abcdef.txt", Target: "architect", MessageID: "hm-42-abcdef", Content: "(BUILDER #3): build is green"}
	if f.Name != want.Name || f.Target != want.Target || f.MessageID != want.MessageID || f.Content != want.Content {
		t.Errorf("got %+v, want %+v", f, want)
	}
	if f.Seen.Before(before) || f.ClaimedAt.Before(f.Seen) {
		t.Errorf("times: seen %v claimed %v (before %v)", f.Seen, f.ClaimedAt, before)
	}
	r.stop()
	if st := w.Stats(); st.Processed != 1 || st.Rejected != 0 || st.Retried != 0 {
		t.Errorf("stats %+v", st)
	}
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left in dir: %v", got)
	}
	if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 0 {
		t.Errorf("left in .claimed: %v", got)
	}
}

// TestBurst: 1,000 files from 4 concurrent writers (two using Write, two a
// temp file and rename) are each delivered once, in order per writer.
func TestBurst(t *testing.T) {
	const writers, per = 4, 250
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: quietLogger(t)})
	r := startWatcher(t, w)
	waitStarted(t, w)
	var wg sync.WaitGroup
	errs := make(chan error, writers*per)
	for i := range writers {
		wg.Go(func() {
			for j := range per {
				id := fmt.Sprintf("hm-w%d-%04d", i, j)
				content := fmt.Sprintf("(ARCH #%d): msg %d from writer %d", j+1, j, i)
				if i%2 == 0 { // hm-send's writer: temp file + link
					if _, err := Write(dir, "builder", id, content); err != nil {
						errs <- err
					}
					continue
				}
				// other tools: temp file + rename
				name := "builder." + id + ".txt"
				tmp := filepath.Join(dir, "."+name+".tmp")
				if err := os.WriteFile(tmp, []byte("[HM-MESSAGE-ID:"+id+"]\n"+content), 0o600); err != nil {
					errs <- err
				} else if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Write: %v", err)
	}
	poll.For(t, 60*time.Second, func() error { return poll.Want(rec.count() >= writers*per, "1000 deliveries, have %v", rec.count()) })
	r.stop()

	files := rec.got()
	if len(files) != writers*per {
		t.Fatalf("%d sink calls, want %d", len(files), writers*per)
	}
	seen := map[string]bool{}
	lastSeq := map[string]int{}
	for _, f := range files {
		if seen[f.MessageID] {
			t.Errorf("duplicate %s", f.MessageID)
		}
		seen[f.MessageID] = true
		// per writer, files arrive in the order written
		var wi, j int
		if _, err := fmt.Sscanf(f.MessageID, "hm-w%d-%d", &wi, &j); err != nil {
			t.Fatalf("id %q: %v", f.MessageID, err)
		}
		key := fmt.Sprint(wi)
		if prev, ok := lastSeq[key]; ok && j < prev {
			t.Errorf("writer %d: message %d after %d", wi, j, prev)
		}
		lastSeq[key] = j
	}
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("%d left in dir, e.g. %v", len(got), got[0])
	}
	if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 0 {
		t.Errorf("left in .claimed: %v", got)
	}
	if st := w.Stats(); st.Processed != writers*per || st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDrainAtStart: files present before Run are delivered, oldest first.
func TestDrainAtStart(t *testing.T) {
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

// TestTransientRetry: a failing sink keeps the file, stops processing and
// retries in order at the next rescan.
func TestTransientRetry(t *testing.T) {
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 3, "retries, have %v", w.Stats().Retried) })
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 2, "delivery after recovery, have %v", rec.count()) })
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

func readReason(t *testing.T, dir, name string) (code, text string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, RejectedDir, name+".reason"))
	if err != nil {
		t.Fatalf("reason file: %v", err)
	}
	code, text, _ = strings.Cut(strings.TrimRight(string(raw), "\n"), "\n")
	return code, text
}

// TestRejections covers sink refusals and files refused by the watcher.
func TestRejections(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		data     []byte
		code     string
		contains string
	}{
		{"sink reject", "nobody.txt", []byte("hi nobody"), "invalid_target", "no such target"},
		{"owner binding", "oracle.x.txt", []byte("(BUILDER-BG-1 #1): hi"), "owner_binding_violation", "builder"},
		{"too large", "architect.big.txt", []byte(strings.Repeat("x", 5000)), CodeTooLarge, "4096"},
		{"empty", "architect.empty.txt", nil, CodeEmpty, "printable"},
		{"whitespace", "architect.ws.txt", []byte(" \r\n\t \n"), CodeEmpty, ""},
		{"binary controls", "architect.bin.txt", []byte{0, 1, 2, 3, 4, 0x1b, 0x7f, 0x10, 0x11}, CodeEmpty, ""},
		{"id only", "architect.id.txt", []byte("[HM-MESSAGE-ID:x]\n"), CodeEmpty, ""},
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
				return poll.Want(err == nil, "rejected %s", tc.file)
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

// TestBinaryGarbageCleaned: garbage with printable parts is delivered
// without control characters.
func TestBinaryGarbageCleaned(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	writeFile(t, dir, "oracle.g.txt", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x1b[2J"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery, have %v", rec.count()) })
	r.stop()
	if got := rec.got()[0].Content; got != "\uFFFDPNG\n\n\nIHDR[2J" {
		t.Errorf("content %q", got)
	}
}

// TestIgnoredNames: files that are not trigger names are left alone, and
// .txt files whose names name no target go to rejected/ (SPEC §7: nothing is
// silently dropped).
func TestIgnoredNames(t *testing.T) {
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 5 && rec.count() >= 1, "several rescans") })
	r.stop()
	if got := rec.got(); len(got) != 1 || got[0].Content != "deliver me" {
		t.Errorf("delivered %+v", got)
	}
	for _, n := range append(names, "readme", "folder.txt") {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	got := listDir(t, filepath.Join(dir, RejectedDir))
	var want []string
	for _, n := range badNames {
		want = append(want, n, n+".reason")
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rejected: %v, want %v", got, want)
	}
}

// TestSymlinkNotFollowed: a symlink with a trigger name never leaks the
// file it points to.
func TestSymlinkNotFollowed(t *testing.T) {
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
	r := startWatcher(t, w)
	if err := os.Symlink(secret, filepath.Join(dir, "architect.live.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "oracle.ok.txt", []byte("fine"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 4 && rec.count() >= 1, "rescans") })
	// a symlink that reaches .claimed/ (a crash, or a swap race) is rejected unread
	if err := os.Symlink(secret, filepath.Join(dir, ClaimedDir, "architect.claimed.txt")); err != nil {
		t.Fatal(err)
	}
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
	if code, _ := readReason(t, dir, "architect.claimed.txt"); code != CodeNotRegular {
		t.Errorf("code %q", code)
	}
	if raw, err := os.ReadFile(secret); err != nil || string(raw) != "TOP SECRET" {
		t.Errorf("secret changed: %q %v", raw, err)
	}
}

// slowWrite writes parts to path in place with a pause between parts (an
// empty first part makes the file sit empty for a pause first).
func slowWrite(path string, parts []string, pause time.Duration) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	for i, p := range parts {
		if i > 0 {
			time.Sleep(pause) // the writer's own behaviour, not a wait for a condition
		}
		if _, err := f.WriteString(p); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// TestSlowWriterNeverTruncated: files written in place with pauses shorter
// than Settle are delivered whole.
func TestSlowWriterNeverTruncated(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		pause time.Duration
	}{
		{"pause before first byte", []string{"", "(ARCH #1): whole"}, 50 * time.Millisecond},
		{"three parts", []string{"(ARCH #2): part one, ", "part two, ", "part three"}, 50 * time.Millisecond},
		{"empty then parts", []string{"", "(ARCH #3): part one, ", "part two"}, 50 * time.Millisecond},
		{"many small parts", strings.Split("(ARCH #4): a b c d e f g h i j", " "), 20 * time.Millisecond},
		{"id line first", []string{"[HM-MESSAGE-ID:slow-1]\n", "(ARCH #5): ", "body"}, 50 * time.Millisecond},
		{"long pause", []string{"(ARCH #6): before ", "after a long pause"}, 300 * time.Millisecond},
	}
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Settle: time.Second, Rescan: 100 * time.Millisecond})
	r := startWatcher(t, w)
	waitStarted(t, w)
	var wg sync.WaitGroup
	for i, tc := range tests {
		wg.Go(func() {
			if err := slowWrite(filepath.Join(dir, fmt.Sprintf("builder.slow%d.txt", i)), tc.parts, tc.pause); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() >= len(tests), "all delivered") })
	r.stop()
	got := map[string]File{}
	for _, f := range rec.got() {
		got[f.Name] = f
	}
	for i, tc := range tests {
		want := strings.TrimSpace(strings.Join(tc.parts, ""))
		if strings.HasPrefix(want, "[HM-MESSAGE-ID:") {
			_, want, _ = strings.Cut(want, "\n")
		}
		if f := got[fmt.Sprintf("builder.slow%d.txt", i)]; f.Content != want {
			t.Errorf("%s: delivered %q, want %q", tc.name, f.Content, want)
		}
	}
	if rec.callCount() != len(tests) {
		t.Errorf("%d sink calls", rec.callCount())
	}
}

// TestRenameFastPathVersusInPlace: with a very long Settle, a renamed file is
// delivered at once while a file written in place waits.
func TestRenameFastPathVersusInPlace(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Settle: time.Hour, Rescan: 50 * time.Millisecond})
	r := startWatcher(t, w)
	waitStarted(t, w)
	inPlace := filepath.Join(dir, "architect.inplace.txt")
	if err := os.WriteFile(inPlace, []byte("written in place"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "architect.renamed.txt", []byte("renamed"))
	if _, err := Write(dir, "oracle", "linked", "via Write"); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() >= 2, "fast path, have %v", rec.count()) })
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 4, "rescans, have %v", w.Stats().Rescans) })
	r.stop()
	for _, f := range rec.got() {
		if f.Name == "architect.inplace.txt" {
			t.Errorf("in-place file delivered before Settle: %+v", f)
		}
	}
	if _, err := os.Stat(inPlace); err != nil {
		t.Errorf("in-place file: %v", err)
	}
}

// TestClaimedLeftovers: files a crash left in .claimed/ go first, and a
// file without an id gets the deterministic one.
func TestClaimedLeftovers(t *testing.T) {
	dir := t.TempDir()
	claimed := filepath.Join(dir, ClaimedDir)
	if err := os.MkdirAll(claimed, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(filepath.Join(claimed, "builder.txt"), []byte("(ARCH #7): crashed mid-claim\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 3, "all delivered, have %v", rec.count()) })
	r.stop()
	got := rec.got()
	if got[2].Name != "architect.txt" {
		t.Errorf("directory file delivered before leftovers: %v, %v, %v", got[0].Name, got[1].Name, got[2].Name)
	}
	for _, f := range got {
		switch f.Name {
		case "builder.txt":
			if want := DerivedID("builder.txt", "(ARCH #7): crashed mid-claim"); f.MessageID != want || f.Target != "builder" {
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
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(w.Stats().Processed == 1, "second attempt, have %v", w.Stats().Processed)
	})
	r.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || ids[0] != DerivedID("oracle.txt", "no id here") {
		t.Errorf("ids %v", ids)
	}
}

func TestUTF16Files(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		id   string
		want string
	}{
		{"architect.le.txt", utf16Bytes("[HM-MESSAGE-ID:le-1]\r\n(ARCH #1): héllo 😀\r\nbye", false, true), "le-1", "(ARCH #1): héllo 😀\nbye"},
		{"architect.be.txt", utf16Bytes("(ORACLE #2): ünïcode\x00 text", true, true), "", "(ORACLE #2): ünïcode text"},
	}
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	for _, tc := range tests {
		writeFile(t, dir, tc.name, tc.data)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() >= len(tests), "delivery") })
	r.stop()
	got := map[string]File{}
	for _, f := range rec.got() {
		got[f.Name] = f
	}
	for _, tc := range tests {
		f := got[tc.name]
		if f.Content != tc.want {
			t.Errorf("%s: content %q, want %q", tc.name, f.Content, tc.want)
		}
		if tc.id != "" && f.MessageID != tc.id {
			t.Errorf("%s: id %q, want %q", tc.name, f.MessageID, tc.id)
		}
	}
}

// TestPollingOnly: without fsnotify, rescans alone deliver everything.
func TestPollingOnly(t *testing.T) {
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 20, "delivery, have %v", rec.count()) })
	r.stop()
	if got := triggerNames(t, dir); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

// TestOverflowRescans: a queue overflow triggers a full rescan, and files
// whose events were lost are still delivered.
func TestOverflowRescans(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t), Rescan: time.Hour, Settle: 20 * time.Millisecond})
	w.injectErr = make(chan error)
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans == 1, "first scan, have %v", w.Stats().Rescans) })
	// Simulate lost events: a file appears in .claimed/ without any event
	// in the watched directory.
	if err := os.WriteFile(filepath.Join(dir, ClaimedDir, "oracle.lost.txt"), []byte("lost event"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.injectErr <- fsnotify.ErrEventOverflow
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery after overflow, have %v", rec.count()) })
	w.injectErr <- errors.New("some watcher error")
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(w.Stats().Rescans >= 3, "rescan after error, have %v", w.Stats().Rescans)
	})
	r.stop()
	st := w.Stats()
	if st.Overflows != 1 || !strings.Contains(st.LastError, "some watcher error") {
		t.Errorf("stats %+v", st)
	}
}

// TestRunStopsPromptly: Run returns soon after cancel, even with files
// waiting and a sink that blocks until its context ends.
func TestRunStopsPromptly(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"idle", func(t *testing.T, dir string) {}},
		{"settling file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "architect.txt"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"blocked sink", func(t *testing.T, dir string) {
			p := writeFile(t, dir, "builder.block.txt", []byte("block"))
			old := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			entered := make(chan struct{}, 1)
			sink := func(ctx context.Context, f File) error {
				entered <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}
			tc.setup(t, dir)
			w := NewWatcher(dir, sink, Options{Logger: testLogger(t), Settle: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			if tc.name == "blocked sink" {
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatal("sink not called")
				}
			} else {
				poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 1, "started, have %v", w.Stats().Rescans) })
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			if tc.name == "blocked sink" {
				// the interrupted file waits in .claimed/ for the next run
				if got := listDir(t, filepath.Join(dir, ClaimedDir)); len(got) != 1 {
					t.Errorf(".claimed holds %v", got)
				}
				if st := w.Stats(); st.Retried != 0 || st.Processed != 0 {
					t.Errorf("stats %+v", st)
				}
			}
		})
	}
}

func TestRunTwice(t *testing.T) {
	w := NewWatcher(t.TempDir(), (&recorder{}).sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 1, "started, have %v", w.Stats().Rescans) })
	if err := w.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
	r.stop()
	// runs again after stopping
	r2 := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 2, "restarted, have %v", w.Stats().Rescans) })
	r2.stop()
}

func TestRunBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(filepath.Join(file, "triggers"), (&recorder{}).sink, Options{Logger: testLogger(t)})
	if err := w.Run(context.Background()); err == nil {
		t.Fatal("Run under a file succeeded")
	}
}

// TestClaimCollision: a new file with the name of one awaiting a retry in
// .claimed/ is not claimed over it, and both are delivered in order.
func TestClaimCollision(t *testing.T) {
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 1, "first failure, have %v", w.Stats().Retried) })
	writeFile(t, dir, "architect.txt", []byte("second"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Retried >= 3, "more failures, have %v", w.Stats().Retried) })
	raw, err := os.ReadFile(filepath.Join(dir, ClaimedDir, "architect.txt"))
	if err != nil || string(raw) != "first" {
		t.Errorf("claimed file: %q %v", raw, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 2, "both delivered, have %v", rec.count()) })
	r.stop()
	got := rec.got()
	if got[0].Content != "first" || got[1].Content != "second" {
		t.Errorf("order %q %q", got[0].Content, got[1].Content)
	}
}

// TestDirRecreated: the watcher recreates a removed directory and keeps
// delivering.
func TestDirRecreated(t *testing.T) {
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
	start := w.Stats().Rescans
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(w.Stats().Rescans >= start+2, "rescan after recreation, have %v", w.Stats().Rescans)
	})
	if _, err := Write(dir, "oracle", "after", "still here"); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery, have %v", rec.count()) })
	r.stop()
	if got := rec.got()[0]; got.MessageID != "after" || got.Content != "still here" {
		t.Errorf("got %+v", got)
	}
}

func TestBadTxtNamesRejected(t *testing.T) {
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
			return poll.Want(err == nil && strings.HasPrefix(string(data), "invalid_target\n"), "%s rejected", name)
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
