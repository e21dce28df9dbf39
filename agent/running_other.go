//go:build !linux

package agent

// childRunning reports whether the hub's child pid has not ended. Without
// waitid's WNOWAIT (x/sys has it on Linux only) it cannot be asked without
// reaping the child: the run's own wait and its output reader tell
// (proc.running).
func childRunning(int) bool { return true }
