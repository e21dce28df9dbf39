//go:build linux

package triggers

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// openForWriting reports whether some process holds path open for writing,
// as far as /proc shows: every /proc/<pid>/fd/<n> that links to path, whose
// fdinfo flags say O_WRONLY or O_RDWR. Best effort: processes of other users
// are invisible unless the hub runs as root, and an unreadable fdinfo counts
// as a writer. path must be absolute with its symlinks resolved, as the
// kernel prints it. The cost is one readlink per open descriptor on the
// machine; it is paid only when a file written in place has otherwise
// settled, once per Settle while a writer keeps it.
func openForWriting(path string) bool {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, p := range procs {
		pid := p.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		fdDir := "/proc/" + pid + "/fd/"
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to see
		}
		for _, fd := range fds {
			if target, err := os.Readlink(fdDir + fd.Name()); err != nil || target != path {
				continue
			}
			if fdWritable("/proc/" + pid + "/fdinfo/" + fd.Name()) {
				return true
			}
		}
	}
	return false
}

// fdWritable reads the flags line of an fdinfo file; true unless it shows
// the descriptor is read-only.
func fdWritable(fdinfo string) bool {
	f, err := os.Open(fdinfo)
	if err != nil {
		return true
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		if err != nil {
			return true
		}
		return flags&syscall.O_ACCMODE != syscall.O_RDONLY
	}
	return true
}
