package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

func TestStartInvalidSpec(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"", "   "} {
		p, err := Start(context.Background(), Spec{Role: "x", Command: cmd}, testLogger(t))
		if !errors.Is(err, ErrInvalidSpec) || p != nil {
			t.Errorf("Start(command %q) = %v, %v; want ErrInvalidSpec", cmd, p, err)
		}
	}
}

func TestCannotStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		wantErr []string // LastError parts
		wantOut string   // replay part
	}{
		{
			name:    "command not found",
			spec:    Spec{Command: "hm-no-such-agent-cli --flag"},
			wantErr: []string{"code 127", "command not found", "not found"},
			wantOut: "not found",
		},
		{
			name:    "missing working directory",
			spec:    Spec{Command: "true", Dir: "/nonexistent/hm-test-dir"},
			wantErr: []string{"cannot start", "no such file or directory"},
			wantOut: "cannot start",
		},
		{
			name:    "not executable",
			spec:    Spec{Command: "./not-executable.sh"},
			wantErr: []string{"code 126", "not executable"},
			wantOut: "Permission denied",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if spec.Dir == "" {
				spec.Dir = t.TempDir()
				if err := os.WriteFile(filepath.Join(spec.Dir, "not-executable.sh"), []byte("echo hi\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec.Restart = true
			spec.MinBackoff = 100 * time.Millisecond
			spec.MaxBackoff = 400 * time.Millisecond
			var mu sync.Mutex
			var exits int
			spec.OnExit = func(int, error) { mu.Lock(); exits++; mu.Unlock() }
			start := time.Now()
			p := startPane(t, spec)
			poll.For(t, 10*time.Second, func() error {
				s := p.Status()
				return poll.Want(s.State == StateExited && s.LastError != "", "state exited with an explanation")
			})
			st := p.Status()
			for _, w := range tc.wantErr {
				if !strings.Contains(st.LastError, w) {
					t.Errorf("LastError %q lacks %q", st.LastError, w)
				}
			}
			poll.For(t, 10*time.Second, func() error {
				return poll.Want(strings.Contains(string(p.Replay()), tc.wantOut), "reason in the replay")
			})
			// A program failing in a loop restarts again and again, with
			// backoff and no spin: 100+200+400+400... ms between attempts,
			// so never more restarts than 100 ms periods elapsed (a loaded
			// machine makes them fewer, not more: waited for, not timed).
			poll.For(t, 30*time.Second, func() error {
				return poll.Want(p.Status().Restarts >= 2, "restarted twice, %d so far", p.Status().Restarts)
			})
			elapsed := time.Since(start)
			restarts := p.Status().Restarts
			if maxRestarts := int(elapsed/(100*time.Millisecond)) + 1; restarts > maxRestarts {
				t.Errorf("%d restarts in %s; want backoff-limited (at most %d)", restarts, elapsed, maxRestarts)
			}
			mu.Lock()
			if exits < restarts {
				t.Errorf("OnExit called %d times for %d restarts", exits, restarts)
			}
			mu.Unlock()
			if !strings.Contains(string(p.Replay()), "[hm] restarting in") {
				t.Errorf("replay shows no restart notice: %q", p.Replay())
			}
		})
	}
}

func TestNoRestartStaysExited(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: "echo bye; exit 4"})
	poll.For(t, 10*time.Second, func() error { return poll.Want(p.Status().State == StateExited && p.Status().LastError != "", "exit") })
	if s := p.Status(); !strings.Contains(s.LastError, "exited with code 4: bye") || s.Restarts != 0 || s.PID != 0 {
		t.Errorf("status = %+v", s)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Write to exited pane = %v, want ErrNotRunning", err)
	}
	// Queued messages wait (nothing to type into) and are kept.
	p.Enqueue(Delivery{MessageID: "w1", Content: "hello"})
	if s := p.Status(); s.Queued != 1 {
		t.Errorf("Queued = %d, want 1", s.Queued)
	}
}

func TestOutputFloodBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "logs", "sub", "pane.log")
	const total = 3_000_000
	p := startPane(t, Spec{
		Command:   fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo; echo flood-done", total),
		RingBytes: 8192,
		LogPath:   logPath,
	})
	maxSeen := 0
	poll.For(t, 60*time.Second, func() error {
		r := p.Replay()
		maxSeen = max(maxSeen, len(r))
		return poll.Want(strings.Contains(string(r), "flood-done"), "the end of the flood in the replay")
	})
	if n := len(p.Replay()); n > 8192 || n == 0 || maxSeen > 8192 {
		t.Errorf("replay holds %d bytes (at most %d seen), want 1..8192", n, maxSeen)
	}
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < total || st.Mode().Perm() != 0o600 {
		t.Errorf("log file: %d bytes, mode %v; want >= %d bytes, 0600", st.Size(), st.Mode().Perm(), total)
	}
	if dst, err := os.Stat(filepath.Dir(logPath)); err != nil || dst.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode = %v, %v; want 0700", dst.Mode().Perm(), err)
	}
}

func TestLogRotation(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "pane.log")
	p := startPane(t, Spec{Command: "head -c 50000 /dev/zero | tr '\\0' y", LogPath: logPath, LogMaxBytes: 20000})
	poll.For(t, 20*time.Second, func() error { return poll.Want(p.Status().State == StateExited, "exit, have %v", p.Status().State) })
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	a, errA := os.Stat(logPath)
	b, errB := os.Stat(logPath + ".1")
	if errA != nil || errB != nil || a.Size() > 20000 || b.Size() > 20000 || b.Size() == 0 {
		t.Errorf("rotated logs: %v %v / %v %v", a, errA, b, errB)
	}
}

func TestStopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		grace   time.Duration
		maxStop time.Duration
	}{
		{"grandchild dies with the group", "sleep 300 & echo $! > pid; exec sleep 301", time.Second, 15 * time.Second},
		{"SIGHUP ignored escalates to SIGKILL", "trap '' HUP; sleep 300 & echo $! > pid; exec sleep 301", 300 * time.Millisecond, 15 * time.Second},
		// set -m: the job gets a process group of its own, still in the
		// pane's session (as Codex's app-server outlived its pane).
		{"child in its own group dies with the session", "set -m; sleep 300 & echo $! > pid; exec sleep 301", time.Second, 15 * time.Second},
		{"child in its own group that ignored SIGHUP is killed", "set -m; sh -c 'trap \"\" HUP; echo $$ > pid; exec sleep 300' & exec sleep 301", 300 * time.Millisecond, 15 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startPane(t, Spec{Command: tc.command, Dir: dir, KillGrace: tc.grace})
			var grandchild int
			poll.For(t, 10*time.Second, func() error {
				b, err := os.ReadFile(filepath.Join(dir, "pid"))
				if err != nil {
					return fmt.Errorf("grandchild pid: %v", err)
				}
				grandchild, err = strconv.Atoi(strings.TrimSpace(string(b)))
				return poll.Want(err == nil, "grandchild pid")
			})
			leader := p.Status().PID
			if processGone(grandchild) || processGone(leader) {
				t.Fatal("processes not running before Stop")
			}
			if strings.Contains(tc.name, "own group") {
				if pg, err := syscall.Getpgid(grandchild); err != nil || pg == leader {
					t.Fatalf("the child's process group is %d (%v); the case needs one of its own", pg, err)
				}
			}
			ctx, cancel := contextWithTimeout(tc.maxStop)
			defer cancel()
			start := time.Now()
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			poll.For(t, 5*time.Second, func() error { return poll.Want(processGone(grandchild), "grandchild gone") })
			if !processGone(leader) {
				t.Errorf("leader %d still running", leader)
			}
			if took < tc.grace/2 && strings.Contains(tc.name, "ignored") {
				t.Errorf("Stop took %s: SIGKILL came before the grace period", took)
			}
			if s := p.Status(); s.State != StateExited {
				t.Errorf("state after Stop = %q", s.State)
			}
		})
	}
}

func TestContextCancelStopsPane(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Spec{Role: "oracle", PaneID: "3", Command: "exec sleep 300"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Status().PID
	cancel()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed after the context was cancelled")
	}
	if !processGone(pid) {
		t.Errorf("program %d still running", pid)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop after cancel: %v", err)
	}
}

func TestStopFromCallbacks(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t, "FAKEAGENT_DONE_WORD=finish")
	var once sync.Once
	var p *Pane
	ready := make(chan struct{})
	stopErr := make(chan error, 1)
	var mu sync.Mutex
	var lines []string
	spec.OnLine = func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		if line == "__HM_BG_DONE__" {
			once.Do(func() {
				<-ready
				// Stopping from inside a callback must not deadlock.
				stopErr <- p.Stop(context.Background())
			})
		}
	}
	exitCodes := make(chan int, 4)
	spec.OnExit = func(code int, err error) { exitCodes <- code }
	var err error
	p, err = Start(context.Background(), spec, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	p.Enqueue(Delivery{MessageID: "d1", Content: "(BUILDER #1): please finish"})
	select {
	case err := <-stopErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("done line not seen or Stop deadlocked")
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	select {
	case <-exitCodes:
	default:
		t.Error("OnExit not called before Done")
	}
	mu.Lock()
	defer mu.Unlock()
	var sawReady bool
	for _, l := range lines {
		if strings.Contains(l, "\x1b") {
			t.Errorf("OnLine line not ANSI-stripped: %q", l)
		}
		sawReady = sawReady || strings.HasPrefix(l, "fakeagent ready")
	}
	if !sawReady {
		t.Errorf("OnLine lines %q lack the banner", lines)
	}
}

func TestResizeReachesProgram(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: "exec /bin/sh", Env: []string{"PATH=" + os.Getenv("PATH"), "PS1=$ ", "HOME=" + t.TempDir()}, Cols: 90, Rows: 20})
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "$ "), "prompt") })
	if _, err := p.Write([]byte("stty size\r")); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "20 90"), "initial size") })
	if err := p.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(0, 10); err == nil {
		t.Error("Resize(0, 10) accepted")
	}
	if _, err := p.Write([]byte("stty size\r")); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "30 100"), "new size") })
	if s := p.Status(); s.Profile != ProfileShell {
		t.Errorf("profile for /bin/sh = %q, want shell", s.Profile)
	}
}

func TestProfileSelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command, profile, want string
	}{
		{"exec /bin/sh", "", ProfileShell},
		{"exec /bin/sh", "default", ProfileShell}, // never type commands into a shell
		{"exec sleep 30", "", ProfileDefault},
		{"exec sleep 30", "Codex", ProfileCodex},
		{"exec sleep 30", "nonsense", ProfileDefault},
		// A name that is no profile falls back to default, and so must
		// never type message text into a shell either.
		{"exec /bin/sh", "nonsense", ProfileShell},
		{"exec /bin/sh", " default ", ProfileShell},
	}
	for _, tc := range tests {
		t.Run(tc.command+"/"+tc.profile, func(t *testing.T) {
			p := startPane(t, Spec{Command: tc.command, Profile: tc.profile, Timing: Profile{Verify: 42 * time.Millisecond}})
			if got := p.Status().Profile; got != tc.want {
				t.Errorf("profile = %q, want %q", got, tc.want)
			}
			if pr := p.Profile(); pr.Verify != 42*time.Millisecond || pr.EnterDelay != ProfileFor(tc.want).EnterDelay {
				t.Errorf("timing = %+v", pr)
			}
		})
	}
}
