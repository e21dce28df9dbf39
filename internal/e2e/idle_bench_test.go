package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// idleWindow is how long an idle process is watched; idleSettle how long
// it is left to settle first (the panes' first prompts, the session
// messages typed at start).
const (
	idleWindow = 20 * time.Second
	idleSettle = 5 * time.Second
)

// procUsage is what the kernel counts for one process: the context
// switches of all its threads (each one a wakeup: voluntary when a thread
// slept and was woken, nonvoluntary when it was preempted) and the time
// its threads ran on a CPU (schedstat, in nanoseconds: the clock-tick
// counts of /proc/<pid>/stat are too coarse for 0.01 s a minute).
type procUsage struct {
	switches int64
	cpu      time.Duration
}

// readUsage reads pid's usage from /proc/<pid>/task/*/status and
// /proc/<pid>/task/*/schedstat.
func readUsage(pid int) (procUsage, error) {
	var u procUsage
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return u, fmt.Errorf("no threads of %d in /proc: %v", pid, err)
	}
	for _, t := range tasks {
		status, err := os.ReadFile(filepath.Join(t, "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "voluntary_ctxt_switches:") || strings.HasPrefix(l, "nonvoluntary_ctxt_switches:") {
				n, err := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
				if err != nil {
					return u, fmt.Errorf("%s/status: %w", t, err)
				}
				u.switches += n
			}
		}
		sched, err := os.ReadFile(filepath.Join(t, "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(sched))
		if len(f) == 0 {
			return u, fmt.Errorf("%s/schedstat: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return u, fmt.Errorf("%s/schedstat: %w", t, err)
		}
		u.cpu += time.Duration(ns)
	}
	return u, nil
}

// reportIdle watches pid for idleWindow and reports its wakeups per
// second and CPU seconds per minute under the given unit prefix.
func reportIdle(b *testing.B, pid int, prefix string) {
	b.Helper()
	before, err := readUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(idleWindow)
	after, err := readUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	secs := time.Since(t0).Seconds()
	b.ReportMetric(float64(after.switches-before.switches)/secs, prefix+"wakeups/s")
	b.ReportMetric((after.cpu-before.cpu).Seconds()/secs*60, prefix+"cpu-s/min")
}

// BenchmarkIdle measures, with three panes each at a shell prompt, how
// often the hub process wakes up and how much CPU it uses, and the same of
// a tmux server hosting three shells, in the same run (#36: ≤ 1 wakeup/s,
// ≤ 0.01 CPU-s a minute).
func BenchmarkIdle(b *testing.B) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Fatalf("tmux is needed for the idle floor: run `make deps` (%v)", err)
	}
	for i := 0; i < b.N; i++ {
		h := startHubB(b)
		time.Sleep(idleSettle)
		reportIdle(b, h.cmd.Process.Pid, "hub-")
		h.kill()

		sock := filepath.Join(b.TempDir(), "tmux.sock")
		run := func(args ...string) {
			cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
			cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("tmux %v: %v: %s", args, err, out)
			}
		}
		run("new-session", "-d", "-x", "120", "-y", "40", "/bin/sh")
		run("split-window", "/bin/sh")
		run("split-window", "/bin/sh")
		out, err := exec.Command(tmux, "-S", sock, "display-message", "-p", "#{pid}").Output()
		if err != nil {
			b.Fatalf("tmux server pid: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			b.Fatalf("tmux server pid %q: %v", out, err)
		}
		time.Sleep(idleSettle)
		reportIdle(b, pid, "tmux-")
		run("kill-server")
	}
}
