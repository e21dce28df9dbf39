package journal

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dirEvents are the inotify events of the ledger's directory that can
// change what its paths name: a name deleted, moved away or moved onto, a
// name created, and the directory itself deleted or moved. Writes are not
// among them, so commits wake nothing.
const dirEvents = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CREATE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// dirNotifier reports changes to the names in one directory (inotify).
type dirNotifier struct {
	f   *os.File // the inotify descriptor, non-blocking: reads wait in the runtime's poller
	buf []byte
}

// newDirNotifier watches dir.
func newDirNotifier(dir string) (*dirNotifier, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, dirEvents); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	return &dirNotifier{f: os.NewFile(uintptr(fd), "inotify"), buf: make([]byte, 4096)}, nil
}

// wait blocks until the directory's names changed (or events were lost:
// the caller checks the paths either way). It fails once close was called
// or the descriptor failed.
func (n *dirNotifier) wait() error {
	if _, err := n.f.Read(n.buf); err != nil {
		return fmt.Errorf("inotify read: %w", err)
	}
	return nil
}

// close ends the watch and any wait in progress.
func (n *dirNotifier) close() { n.f.Close() }
