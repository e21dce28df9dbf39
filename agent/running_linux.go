package agent

import "golang.org/x/sys/unix"

// childRunning reports whether the hub's child pid has not ended: asked
// without reaping it (WNOWAIT), so the run's own wait still gets its
// status. A pid that is no child of this process (reaped already) has
// ended.
func childRunning(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == 0
}
