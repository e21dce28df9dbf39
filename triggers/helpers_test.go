package triggers

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// testLogger sends logs to the test output.
func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelDebug) }

// quietLogger logs warnings and errors only (for tests with many files).
func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// recorder is a Sink that records files and can fail on demand.
type recorder struct {
	mu    sync.Mutex
	files []File
	calls int
	at    []time.Time
	// fail, if set, decides the result of each call before it is recorded
	fail func(f File, call int) error
	// notify, if set, receives every recorded file (non-blocking callers
	// must size it).
	notify chan File
}

func (r *recorder) sink(ctx context.Context, f File) error {
	r.mu.Lock()
	r.calls++
	call := r.calls
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(f, call); err != nil {
			return err
		}
	}
	now := time.Now()
	r.mu.Lock()
	r.files = append(r.files, f)
	r.at = append(r.at, now)
	r.mu.Unlock()
	if r.notify != nil {
		select {
		case r.notify <- f:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *recorder) got() []File {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]File(nil), r.files...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.files)
}

func (r *recorder) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// running is a watcher started by startWatcher.
type running struct {
	w    *Watcher
	stop func() // cancels and waits for Run; fails the test on a slow or bad return
}

// startWatcher runs w in a goroutine and registers its shutdown.
func startWatcher(t testing.TB, w *Watcher) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return &running{w: w, stop: stop}
}

// waitStarted waits until Run has set up its watch and done its first scan.
func waitStarted(t testing.TB, w *Watcher) {
	t.Helper()
	poll.For(t, 10*time.Second, func() error { return poll.Want(w.Stats().Rescans >= 1, "watcher started, have %v", w.Stats().Rescans) })
}

// writeFile writes data to dir/name via a temp dotfile and a rename.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// triggerNames lists the non-dot entries of dir other than rejected/.
func triggerNames(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	for _, name := range listDir(t, dir) {
		if !strings.HasPrefix(name, ".") && name != RejectedDir {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// listDir lists dir's entry names (nil if it does not exist).
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
