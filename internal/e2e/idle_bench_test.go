package e2e

import (
	"testing"
	"time"

	"hm/internal/ground/testutil"
)

// idleWindow is how long an idle process is watched; idleSettle how long
// it is left to settle first (the panes' first prompts, the session
// messages typed at start).
const (
	idleWindow = 20 * time.Second
	idleSettle = 5 * time.Second
)

// reportIdle watches pid for idleWindow and reports its wakeups per
// second and CPU seconds per minute under the given unit prefix.
func reportIdle(b *testing.B, pid int, prefix string) {
	b.Helper()
	before, err := testutil.ReadProcUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(idleWindow)
	after, err := testutil.ReadProcUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	secs := time.Since(t0).Seconds()
	d := after.Sub(before)
	b.ReportMetric(float64(d.Switches)/secs, prefix+"wakeups/s")
	b.ReportMetric(d.CPU.Seconds()/secs*60, prefix+"cpu-s/min")
}

// BenchmarkIdle measures, with three panes each at a shell prompt, how
// often the hub process wakes up and how much CPU it uses, and the same of
// a tmux server hosting three shells, in the same run (#36: ≤ 1 wakeup/s,
// ≤ 0.01 CPU-s a minute).
func BenchmarkIdle(b *testing.B) {
	for i := 0; i < b.N; i++ {
		h := startHubB(b)
		time.Sleep(idleSettle)
		reportIdle(b, h.cmd.Process.Pid, "hub-")
		h.kill()

		tmux := testutil.StartTmux(b, "", 120, 40, "/bin/sh")
		tmux.Run("split-window", "/bin/sh")
		tmux.Run("split-window", "/bin/sh")
		time.Sleep(idleSettle)
		reportIdle(b, tmux.PID(), "tmux-")
		tmux.Kill()
	}
}
