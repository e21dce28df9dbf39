package agent

import (
	"errors"

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
