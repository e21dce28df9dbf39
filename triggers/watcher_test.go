package triggers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
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
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "sink call") })
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
	t.Parallel()
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
	poll.For(t, 60*time.Second, func() error { return poll.Want(rec.count() >= writers*per, "1000 deliveries") })
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

// TestBinaryGarbageCleaned: garbage with printable parts is delivered
// without control characters.
func TestBinaryGarbageCleaned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recorder{}
	w := NewWatcher(dir, rec.sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	writeFile(t, dir, "oracle.g.txt", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x1b[2J"))
	poll.For(t, 10*time.Second, func() error { return poll.Want(rec.count() == 1, "delivery") })
	r.stop()
	if got := rec.got()[0].Content; got != "\uFFFDPNG\n\n\nIHDR[2J" {
		t.Errorf("content %q", got)
	}
}

func TestUTF16Files(t *testing.T) {
	t.Parallel()
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

// TestRunStopsPromptly: Run returns soon after cancel, even with files
// waiting and a sink that blocks until its context ends.
func TestRunStopsPromptly(t *testing.T) {
	t.Parallel()
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
				poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 1, "started") })
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
	t.Parallel()
	w := NewWatcher(t.TempDir(), (&recorder{}).sink, Options{Logger: testLogger(t)})
	r := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 1, "started") })
	if err := w.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
	r.stop()
	// runs again after stopping
	r2 := startWatcher(t, w)
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 2, "restarted") })
	r2.stop()
}

func TestRunBadDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(filepath.Join(file, "triggers"), (&recorder{}).sink, Options{Logger: testLogger(t)})
	if err := w.Run(context.Background()); err == nil {
		t.Fatal("Run under a file succeeded")
	}
}
