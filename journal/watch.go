// This file watches the ledger's files: a database or WAL file deleted or
// replaced under the running writer (an operator's rm, a sync tool) would
// take every later commit with it, so the ledger stops committing instead.

package journal

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrFilesGone means the database or its -wal file is no longer the file
// the ledger opened (deleted, renamed or replaced). It wraps
// ErrUnavailable; the ledger commits nothing more until it is reopened.
var ErrFilesGone = fmt.Errorf("%w: ledger file deleted or replaced", ErrUnavailable)

// fileWatch holds an open descriptor of each watched file, so its inode
// cannot be freed and reused by a new file at the same path, and compares
// it with a stat of the path.
type fileWatch struct {
	mu    sync.Mutex
	files []watchedFile
	err   atomic.Pointer[error] // sticky once set
}

type watchedFile struct {
	path string
	f    *os.File
	info os.FileInfo
}

// watchInterval is how often an idle ledger checks its files (the writer
// also checks around every commit).
const watchInterval = time.Second

// watch starts watching path (the database). The WAL file is picked up
// when it first exists.
func (l *Ledger) watch() error {
	if err := l.files.add(l.path); err != nil {
		return err
	}
	_ = l.files.add(l.path + "-wal")
	return nil
}

func (w *fileWatch) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("watch %s: %w", path, err)
	}
	w.mu.Lock()
	w.files = append(w.files, watchedFile{path: path, f: f, info: info})
	w.mu.Unlock()
	return nil
}

// close releases the descriptors.
func (w *fileWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.files {
		f.f.Close()
	}
	w.files = nil
}

// check stats the watched paths (one stat each) and returns ErrFilesGone,
// sticky, once one of them is missing or another file.
func (l *Ledger) checkFiles() error {
	if p := l.files.err.Load(); p != nil {
		return *p
	}
	w := &l.files
	w.mu.Lock()
	var bad error
	for _, f := range w.files {
		st, err := os.Stat(f.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			bad = fmt.Errorf("%w: %s was deleted", ErrFilesGone, f.path)
		case err != nil:
			bad = fmt.Errorf("%w: stat %s: %w", ErrFilesGone, f.path, err)
		case !os.SameFile(st, f.info):
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
			if info, err := f.Stat(); err == nil {
				w.files = append(w.files, watchedFile{path: wal, f: f, info: info})
			} else {
				f.Close()
			}
		}
	}
	w.mu.Unlock()
	if bad == nil {
		return nil
	}
	if l.files.err.CompareAndSwap(nil, &bad) {
		l.log.Error("journal: THE LEDGER FILE WAS DELETED OR REPLACED UNDER THE RUNNING HUB; nothing more is committed or acknowledged until the hub restarts (hm journal verify, then hm up)",
			"path", l.path, "err", bad)
	}
	return *l.files.err.Load()
}

// Health reports whether the ledger can still commit into the files it
// opened: nil, or an error wrapping ErrFilesGone (and ErrUnavailable) once
// the database or its WAL was deleted or replaced. It stats the files, so
// it is current even when nothing is being written.
func (l *Ledger) Health() error {
	if l.opts.ReadOnly {
		return nil
	}
	select {
	case <-l.closing:
		return ErrClosed
	default:
	}
	return l.checkFiles()
}

// watchLoop checks the files every watchInterval so a deletion is noticed
// (and logged) even while nothing is written.
func (l *Ledger) watchLoop() {
	defer close(l.watchDone)
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-t.C:
			if l.checkFiles() != nil {
				return
			}
		}
	}
}
