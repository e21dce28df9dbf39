package agent

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// sZomb is p_stat of a zombie in the kernel's struct extern_proc
// (<sys/proc.h>: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5).
const sZomb = 5

// groupAlive reports whether any process of the group is still running.
// Zombies do not count: an orphaned zombie may never be reaped when the init
// process does not reap. macOS lists the group's members with the
// kern.proc.pgrp sysctl.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return true // cannot tell: assume alive
	}
	for i := range kps {
		if kps[i].Eproc.Pgid == int32(pgid) && kps[i].Proc.P_stat != sZomb {
			return true
		}
	}
	return false
}

// procAlive reports whether pid exists and is not a zombie.
func procAlive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return true // kill says it exists; cannot tell more
	}
	return kp.Proc.P_pid == int32(pid) && kp.Proc.P_stat != sZomb
}

// sessionProcs returns the running processes of session sid that are not
// in process group sid (see the Linux version); macOS lists every process
// with the kern.proc.all sysctl and asks each for its session.
func sessionProcs(sid int) []int {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var out []int
	for i := range kps {
		pid := int(kps[i].Proc.P_pid)
		if pid <= 1 || int(kps[i].Eproc.Pgid) == sid || kps[i].Proc.P_stat == sZomb {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			out = append(out, pid)
		}
	}
	return out
}

// markedProcs finds nothing here: macOS cannot read another process's environment without privileges, so a
// descendant that left the pane's session (setsid) outlives Stop
// (docs/operations.md).
func markedProcs(string) []int { return nil }

// waitGone blocks until pid has exited. hm is not its parent (the program
// was adopted from a keeper), so it cannot reap it: kqueue's EVFILT_PROC
// reports the exit; should kqueue fail, procAlive is polled.
func waitGone(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		pollGone(pid)
		return
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{ev}, out, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return // already gone
		case err != nil:
			pollGone(pid)
			return
		case n > 0:
			return
		}
	}
}

// slaveName is "" here: a run a keeper handed over has no unread-input
// witness on this system (unread returns -1; see unread.go).
func slaveName(*os.File) string { return "" }
