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
	if held, known := leaseSays(path); known {
		return held
	}
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

// leaseSays asks the kernel cheaply: a read lease (F_SETLEASE F_RDLCK) is
// refused with EAGAIN exactly while some descriptor has the file open for
// writing. Taking one needs the file's owner or CAP_LEASE and leases
// enabled; known is false when the kernel would not say, and the /proc scan
// answers instead. The lease is dropped at once (a writer opening the file
// meanwhile waits for that, not for a lease break).
func leaseSays(path string) (held, known bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, false
	}
	defer func() { _ = syscall.Close(fd) }()
	switch _, err := fcntl(fd, syscall.F_SETLEASE, syscall.F_RDLCK); err {
	case nil:
		_, _ = fcntl(fd, syscall.F_SETLEASE, syscall.F_UNLCK)
		return false, true
	case syscall.EAGAIN:
		return true, true
	default:
		return false, false
	}
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}
