//go:build unix && !linux && !darwin

package agent

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether any process of the group still exists. Without
// a portable way to list a group's members (Linux has /proc, macOS a
// sysctl), a zombie left in the group counts as alive here: Stop then waits
// out KillGrace and sends SIGKILL, which is harmless.
func groupAlive(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// procAlive reports whether pid still exists (zombies included, see
// groupAlive).
func procAlive(pid int) bool {
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// sessionProcs finds no session members here: without a portable process
// list only the pane's process group is signalled.
func sessionProcs(int) []int { return nil }

// markedProcs finds nothing here: this system has no /proc to read environments from, so a
// descendant that left the pane's session (setsid) outlives Stop
// (docs/operations.md).
func markedProcs(string) []int { return nil }

// waitGone blocks until pid has exited (hm, not its parent, cannot reap
// it): procAlive is polled.
func waitGone(pid int) { pollGone(pid) }

// slaveName is "" here: a run a keeper handed over has no unread-input
// witness on this system (unread returns -1; see unread.go).
func slaveName(*os.File) string { return "" }
