package layout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HubLock is the exclusive lock a running hub holds on runtime/hub.lock for
// its whole life, so that one root never has two hubs. The kernel releases
// it when the process ends, however it ends.
type HubLock struct {
	f *os.File
}

// AlreadyRunningError says another hub holds the root's lock.
type AlreadyRunningError struct {
	Root string
	PID  int // 0 when the holder has not recorded itself yet
	Port int
}

func (e *AlreadyRunningError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("a hub is already running for this root (%s; it is still starting)", e.Root)
	}
	return fmt.Sprintf("a hub is already running for this root (pid %d, port %d)", e.PID, e.Port)
}

// HubLockPath is runtime/hub.lock.
func (l Layout) HubLockPath() string { return filepath.Join(l.Runtime(), "hub.lock") }

// LockHub takes the root's hub lock without waiting. When another hub holds
// it, the error is an *AlreadyRunningError naming that hub's pid and port.
func (l Layout) LockHub() (*HubLock, error) {
	if err := os.MkdirAll(l.Runtime(), 0o700); err != nil {
		return nil, fmt.Errorf("hub lock: %w", err)
	}
	f, err := os.OpenFile(l.HubLockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hub lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, port := readLockOwner(f)
			return nil, &AlreadyRunningError{Root: l.Root, PID: pid, Port: port}
		}
		return nil, fmt.Errorf("hub lock %s: %w", l.HubLockPath(), err)
	}
	return &HubLock{f: f}, nil
}

// Record writes the holder's pid and port into the lock file, in place (the
// lock is on this inode, so the file is never replaced).
func (k *HubLock) Record(pid, port int) error {
	if err := k.f.Truncate(0); err != nil {
		return fmt.Errorf("hub lock: %w", err)
	}
	if _, err := k.f.WriteAt([]byte(strconv.Itoa(pid)+" "+strconv.Itoa(port)+"\n"), 0); err != nil {
		return fmt.Errorf("hub lock: %w", err)
	}
	return nil
}

// Release empties and unlocks the file. It is safe to call more than once.
// It unlocks before closing: a child another goroutine is forking holds a
// copy of every descriptor until it execs, and the flock lasts as long as
// any copy does, while LOCK_UN releases it for all of them.
func (k *HubLock) Release() error {
	if k == nil || k.f == nil {
		return nil
	}
	_ = k.f.Truncate(0)
	uerr := unix.Flock(int(k.f.Fd()), unix.LOCK_UN)
	err := k.f.Close()
	k.f = nil
	if uerr != nil {
		return fmt.Errorf("hub lock: unlock: %w", uerr)
	}
	return err
}

func readLockOwner(f *os.File) (pid, port int) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 64))
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, 0
	}
	pid, _ = strconv.Atoi(fields[0])
	port, _ = strconv.Atoi(fields[1])
	return pid, port
}
