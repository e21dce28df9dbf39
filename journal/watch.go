// This file watches the ledger's files: a database or WAL file deleted or
// replaced under the running writer (an operator's rm, a sync tool) would
// take every later commit with it, and the commits the WAL held. The writer
// re-creates the files from what its connection still reads (recover.go);
// only if that fails does the ledger stop committing.

package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"zombiezen.com/go/sqlite"
)

// ErrFilesGone means the database or its -wal file is no longer the file
// the ledger opened (deleted, renamed or replaced) and the writer could not
// re-create them. It wraps ErrUnavailable; the ledger commits nothing more
// until it is reopened.
var ErrFilesGone = fmt.Errorf("%w: ledger file deleted or replaced", ErrUnavailable)

// fileWatch holds an open descriptor of each watched file, so its inode
// cannot be freed and reused by a new file at the same path: checkFiles
// asks the descriptors whether the files still have a name, checkPaths
// compares them with a stat of the paths.
type fileWatch struct {
	mu    sync.Mutex
	files []watchedFile
	st    unix.Stat_t           // checkFiles' buffer, under mu
	err   atomic.Pointer[error] // sticky once set: the files could not be re-created
	// recheck is set while a check op the watch loop queued waits for the
	// writer (one at a time).
	recheck atomic.Bool
	// notify reports changes to the names in the ledger's directory; nil
	// where that is not available, and the watch loop polls instead. Under
	// mu: the writer sets it again when it re-creates the files, while
	// Close may stop it (stopped: no new one is kept after that).
	notify  *dirNotifier
	stopped bool
}

type watchedFile struct {
	path     string
	f        *os.File
	fd       int    // f's descriptor, for fstat
	dev, ino uint64 // of f: the path must still name this file
}

// newWatchedFile identifies f (opened at path) by device and inode.
func newWatchedFile(path string, f *os.File) (watchedFile, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return watchedFile{}, fmt.Errorf("watch %s: %w", path, err)
	}
	return watchedFile{path: path, f: f, fd: int(f.Fd()), dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil // Dev is an int32 on darwin
}

// watchInterval is how often an idle ledger checks its files where it
// cannot be told of changes to its directory (the writer also checks
// around every commit).
const watchInterval = time.Second

// watch starts watching path (the database). The WAL file is picked up
// when it first exists.
func (l *Ledger) watch() error {
	if err := l.files.add(l.path); err != nil {
		return err
	}
	_ = l.files.add(l.path + "-wal")
	if l.opts.noNotify {
		return nil
	}
	n, err := newDirNotifier(filepath.Dir(l.path))
	if err != nil {
		l.log.Debug("journal: checking the ledger files every second", "err", err)
		return nil
	}
	l.files.setNotify(n)
	return nil
}

// setNotify makes n the directory watch, unless stopNotify came first
// (then n is closed).
func (w *fileWatch) setNotify(n *dirNotifier) {
	w.mu.Lock()
	stopped := w.stopped
	if !stopped {
		w.notify = n
	}
	w.mu.Unlock()
	if stopped {
		n.close()
	}
}

// notifier is the directory watch, or nil.
func (w *fileWatch) notifier() *dirNotifier {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notify
}

func (w *fileWatch) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	wf, err := newWatchedFile(path, f)
	if err != nil {
		f.Close()
		return err
	}
	w.mu.Lock()
	w.files = append(w.files, wf)
	w.mu.Unlock()
	return nil
}

// close releases the descriptors.
func (w *fileWatch) close() {
	w.stopNotify()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.files {
		f.f.Close()
	}
	w.files = nil
}

// foreign reports whether path (one of the watched paths) now names a file
// other than the one the ledger opened.
func (w *fileWatch) foreign(path string) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.files {
		if f.path == path {
			return uint64(st.Dev) != f.dev || uint64(st.Ino) != f.ino // Dev is an int32 on darwin
		}
	}
	return false
}

// failFiles makes err sticky and says so once, loudly.
func (l *Ledger) failFiles(err error) error {
	if l.files.err.CompareAndSwap(nil, &err) {
		l.log.Error("journal: THE LEDGER FILE WAS DELETED OR REPLACED UNDER THE RUNNING HUB AND COULD NOT BE RE-CREATED; nothing more is committed or acknowledged until the hub restarts (hm journal verify, then hm up)",
			"path", l.path, "err", err)
	}
	return *l.files.err.Load()
}

// checkFiles is the check around every commit: one fstat(2) of each
// descriptor the watch holds, into a reused buffer, and no path lookup. A
// file deleted, or replaced by another moved or written in its place, has
// no name left (its link count is 0); the path check then says which.
// Renamed away, the file still holds what is committed to it, and the next
// path check (Health, the watch loop's) stops the ledger.
func (l *Ledger) checkFiles() error {
	if p := l.files.err.Load(); p != nil {
		return *p
	}
	w := &l.files
	w.mu.Lock()
	unlinked := false
	for _, f := range w.files {
		if err := unix.Fstat(f.fd, &w.st); err != nil || w.st.Nlink == 0 {
			unlinked = true
			break
		}
	}
	n := len(w.files)
	w.mu.Unlock()
	if unlinked || n < 2 {
		return l.checkPaths()
	}
	return nil
}

// checkPaths stats the watched paths (and picks up the WAL once it
// exists) and returns ErrFilesGone once one of them is missing or names
// another file (sticky only once the writer failed to re-create them).
func (l *Ledger) checkPaths() error {
	if p := l.files.err.Load(); p != nil {
		return *p
	}
	w := &l.files
	w.mu.Lock()
	var bad error
	for _, f := range w.files {
		err := unix.Stat(f.path, &w.st)
		switch {
		case errors.Is(err, unix.ENOENT):
			bad = fmt.Errorf("%w: %s was deleted", ErrFilesGone, f.path)
		case err != nil:
			bad = fmt.Errorf("%w: stat %s: %w", ErrFilesGone, f.path, err)
		case uint64(w.st.Dev) != f.dev || uint64(w.st.Ino) != f.ino: // Dev is an int32 on darwin
			bad = fmt.Errorf("%w: %s was replaced by another file", ErrFilesGone, f.path)
		}
		if bad != nil {
			break
		}
	}
	if bad == nil && len(w.files) == 1 {
		// The WAL appears with the first write after the switch to WAL mode.
		wal := l.path + "-wal"
		if f, err := os.Open(wal); err == nil {
			if wf, err := newWatchedFile(wal, f); err == nil {
				w.files = append(w.files, wf)
			} else {
				f.Close()
			}
		}
	}
	w.mu.Unlock()
	return bad
}

// Health reports whether the ledger can still commit into the files it
// opened: nil, or an error wrapping ErrFilesGone (and ErrUnavailable) once
// the database or its WAL was deleted or replaced (until the writer has
// re-created them, or for good if it could not). It stats the files, so it
// is current even when nothing is being written.
func (l *Ledger) Health() error {
	if l.opts.ReadOnly {
		return nil
	}
	select {
	case <-l.closing:
		return ErrClosed
	default:
	}
	return l.checkPaths()
}

// stopNotify ends the directory watch (and the watch loop's wait on it).
func (w *fileWatch) stopNotify() {
	w.mu.Lock()
	n := w.notify
	w.stopped = true
	w.mu.Unlock()
	if n != nil {
		n.close()
	}
}

// watchLoop checks the files whenever a name in their directory changes,
// so a deletion is noticed even while nothing is written: it asks the
// writer to check them, which re-creates them (recover.go). Where it cannot
// be told of changes, or once the notification failed, it checks every
// watchInterval. It stops once re-creating failed for good.
func (l *Ledger) watchLoop() {
	defer close(l.watchDone)
	if n := l.files.notifier(); n != nil {
		for {
			err := n.wait()
			select {
			case <-l.closing:
				return
			default:
			}
			if err != nil {
				l.log.Warn("journal: watching the ledger's directory failed; checking its files every second instead", "err", err)
				break
			}
			if !l.checkFilesChanged() {
				return
			}
		}
	}
	every := watchInterval
	if l.opts.filePoll > 0 {
		every = l.opts.filePoll
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-t.C:
		}
		if !l.checkFilesChanged() {
			return
		}
	}
}

// checkFilesChanged has the writer re-create the files if a path no
// longer names the file the ledger opened. False once that failed for good.
func (l *Ledger) checkFilesChanged() bool {
	if l.files.err.Load() != nil {
		return false
	}
	if l.checkPaths() != nil {
		l.requestFileCheck()
	}
	return true
}

// requestFileCheck queues an op that only makes the writer check the
// files (and re-create them), unless one is already waiting.
func (l *Ledger) requestFileCheck() {
	if !l.files.recheck.CompareAndSwap(false, true) {
		return
	}
	o := &op{kind: opDirect, name: "check ledger files", checkPaths: true, direct: func(*sqlite.Conn) error {
		l.files.recheck.Store(false)
		return nil
	}, onErr: func(error) { l.files.recheck.Store(false) }}
	if !l.trySubmit(o) {
		l.files.recheck.Store(false)
	}
}
