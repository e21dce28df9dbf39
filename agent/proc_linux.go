package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether any process of the group is still running.
// Zombies do not count: an orphaned zombie may never be reaped when the init
// process does not reap. Linux walks /proc for the group's members.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	alive := false
	walkProcs(func(pid int, st procState) bool {
		alive = st.pgrp == pgid && st.running()
		return !alive
	})
	return alive
}

// sessionProcs returns the running processes of session sid that are not
// in process group sid: descendants a pane's program moved to groups of
// their own (a job-control shell's jobs), which a signal to the pane's
// group does not reach.
func sessionProcs(sid int) []int {
	var out []int
	walkProcs(func(pid int, st procState) bool {
		if st.session == sid && st.pgrp != sid && st.running() {
			out = append(out, pid)
		}
		return true
	})
	return out
}

// procAlive reports whether pid exists and is neither a zombie nor dead.
func procAlive(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && st.running()
}

// procState is what hm reads of /proc/<pid>/stat.
type procState struct {
	state         byte
	pgrp, session int
}

func (s procState) running() bool { return s.state != 'Z' && s.state != 'X' }

// walkProcs calls fn for every process in /proc until fn returns false.
func walkProcs(fn func(pid int, st procState) bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok && !fn(pid, st) {
			return
		}
	}
}

// readProcStat reads the state, process group and session of pid.
func readProcStat(pid int) (procState, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procState{}, false
	}
	// pid (comm) state ppid pgrp session ...; comm may contain spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procState{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return procState{}, false
	}
	pg, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return procState{}, false
	}
	return procState{state: f[0][0], pgrp: pg, session: sid}, true
}

// markedProcs returns the running processes whose environment holds the
// entry mark ("NAME=value"), read from /proc/<pid>/environ.
func markedProcs(mark string) []int {
	want := []byte(mark)
	var out []int
	walkProcs(func(pid int, st procState) bool {
		if !st.running() {
			return true
		}
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			return true
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				out = append(out, pid)
				break
			}
		}
		return true
	})
	return out
}

// waitGone blocks until pid has exited. hm is not its parent (the program
// was adopted from a keeper), so it cannot reap it: a pidfd reports the
// exit; without one (Linux before 5.3) procAlive is polled.
func waitGone(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		pollGone(pid)
		return
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			pollGone(pid)
			return
		}
		if n > 0 {
			return
		}
	}
}

// slaveName is the path of master's terminal (/dev/pts/N), for a run a
// keeper handed over (its path was not kept); "" when it cannot be told.
func slaveName(master *os.File) string {
	rc, err := master.SyscallConn()
	if err != nil {
		return ""
	}
	n, nerr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { n, nerr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN) }); err != nil || nerr != nil {
		return ""
	}
	return "/dev/pts/" + strconv.Itoa(n)
}
