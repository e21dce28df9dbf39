package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcUsage is what the kernel counts for one process: the context
// switches of all its threads (each one a wakeup: voluntary when a thread
// slept and was woken, nonvoluntary when it was preempted) and the time
// its threads ran on a CPU (schedstat, in nanoseconds: the clock-tick
// counts of /proc/<pid>/stat are too coarse for 0.01 s a minute).
type ProcUsage struct {
	Switches int64
	CPU      time.Duration
}

// Sub returns the usage between before and u.
func (u ProcUsage) Sub(before ProcUsage) ProcUsage {
	return ProcUsage{Switches: u.Switches - before.Switches, CPU: u.CPU - before.CPU}
}

// ReadProcUsage reads pid's usage from /proc/<pid>/task/*/status and
// /proc/<pid>/task/*/schedstat (Linux only). Threads that ended are no
// longer counted.
func ReadProcUsage(pid int) (ProcUsage, error) {
	var u ProcUsage
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
				u.Switches += n
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
		u.CPU += time.Duration(ns)
	}
	return u, nil
}
