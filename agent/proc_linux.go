package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// groupAlive reports whether any process of the group is still running.
// Zombies do not count: an orphaned zombie may never be reaped when the init
// process does not reap. Linux walks /proc for the group's members.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume alive
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procAlive reports whether pid exists and is neither a zombie nor dead.
func procAlive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads the state and process group of pid from /proc.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil || len(f[0]) != 1 {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
