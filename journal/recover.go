// This file re-creates the ledger's files when the database or its -wal was
// deleted, replaced or renamed away under the running writer (watch.go
// notices). The writer's connection still reads everything committed, the
// commits only the lost -wal held included, so the writer copies that into
// a new database, closes every connection on the old files, puts the copy
// under the ledger's name and reopens. Until that succeeds nothing is
// acknowledged (ErrFilesGone, journal_unavailable).

package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"hm/internal/ground/atomicfile"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// recoverSuffix names the copy the writer makes beside the database while
// it re-creates the files. One left after a crash holds what the ledger had
// committed when the copy was made (if the copy finished).
const recoverSuffix = ".recovering"

// recoverRetry spaces attempts to re-create the files after one failed
// before it touched them (a read still running, the disk full for the
// copy): meanwhile every write is refused with ErrFilesGone.
const recoverRetry = time.Second

// readersWait bounds how long the writer waits for reads in progress to
// give their connections back before it closes them.
const readersWait = 10 * time.Second

// ckptPause asks the checkpointer to close its connection (released) and
// to open a new one when resume is closed.
type ckptPause struct{ released, resume chan struct{} }

// filesOK checks the ledger's files (after a commit, before a direct op;
// by their paths too when paths is set, for the watch loop's check op) and
// re-creates them when the database or its -wal is gone: nil means the
// files under the ledger's name hold everything committed.
func (w *writer) filesOK(paths bool) error {
	check := w.l.checkFiles
	if paths {
		check = w.l.checkPaths
	}
	err := check()
	if err == nil || !errors.Is(err, ErrFilesGone) || w.l.files.err.Load() != nil {
		return err
	}
	if time.Now().Before(w.recoverAt) {
		return err
	}
	touched, rerr := w.recoverFiles(err)
	if rerr == nil {
		return nil
	}
	if !touched {
		w.recoverAt = time.Now().Add(recoverRetry)
		w.l.log.Warn("journal: could not re-create the ledger file yet; refusing writes and trying again", "path", w.l.path, "err", rerr)
		return fmt.Errorf("%w (re-creating it: %w)", err, rerr)
	}
	return w.l.failFiles(fmt.Errorf("%w (re-creating it failed: %w)", err, rerr))
}

// recoverFiles re-creates the ledger's files from the writer's connection.
// touched reports whether the old connections were already closed when it
// failed (the ledger then cannot go on).
func (w *writer) recoverFiles(cause error) (touched bool, err error) {
	l := w.l
	start := time.Now()
	tmp := l.path + recoverSuffix
	if err := w.copyTo(tmp); err != nil {
		_ = removeDB(tmp)
		return false, fmt.Errorf("copy the open ledger to %s: %w", tmp, err)
	}
	events := w.lastEventID()
	resume := l.pauseCheckpointer()
	defer resume()
	readers, err := l.takeReaders(readersWait)
	if err != nil {
		_ = removeDB(tmp)
		return false, err
	}
	// Files put in place of the ledger's are kept; then every connection
	// on the old files closes (the last one removes the -wal and -shm by
	// name, so none may stay open once the copy is in place).
	aside := l.setAsideForeign()
	w.conn.Close()
	w.conn = nil
	for _, c := range readers {
		c.Close()
	}
	l.files.close()
	if err := installDB(tmp, l.path); err != nil {
		l.loseReaders(0)
		return true, fmt.Errorf("put %s in place: %w (it holds everything committed)", tmp, err)
	}
	if err := w.reopen(len(readers)); err != nil {
		return true, err
	}
	l.log.Warn("journal: the ledger file was deleted or replaced under the running hub; re-created it under its name with everything committed",
		"path", l.path, "cause", cause, "events", events, "set_aside", aside, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// copyTo copies the database as the writer's connection sees it into a
// new file at dst (the online backup: page by page, WAL content included)
// and syncs it.
func (w *writer) copyTo(dst string) error {
	if err := removeDB(dst); err != nil {
		return err
	}
	if err := createFile(dst); err != nil {
		return err
	}
	conn, err := sqlite.OpenConn(dst, sqlite.OpenReadWrite)
	if err != nil {
		return err
	}
	if err := backup(conn, w.conn); err != nil {
		conn.Close()
		return err
	}
	if err := conn.Close(); err != nil {
		return err
	}
	f, err := os.Open(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// backup copies src's main database into dst's, retrying while busy.
func backup(dst, src *sqlite.Conn) error {
	b, err := sqlite.NewBackup(dst, "main", src, "main")
	if err != nil {
		return err
	}
	defer b.Close()
	for tries := 0; ; tries++ {
		more, err := b.Step(-1)
		switch {
		case !more && err == nil:
			return nil
		case !more || tries == 100:
			return err
		case err != nil:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// lastEventID is the chain's last event id as the writer sees it (0 if it
// cannot tell), for the log.
func (w *writer) lastEventID() int64 {
	var id int64
	_ = sqlitex.ExecuteTransient(w.conn, "SELECT coalesce(max(event_id),0) FROM comms_events", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { id = stmt.ColumnInt64(0); return nil },
	})
	return id
}

// pauseCheckpointer makes the checkpointer close its connection; the
// returned func lets it open a new one.
func (l *Ledger) pauseCheckpointer() (resume func()) {
	p := ckptPause{released: make(chan struct{}), resume: make(chan struct{})}
	select {
	case l.ckptPause <- p:
		<-p.released
	case <-l.ckptDone:
	}
	return func() { close(p.resume) }
}

// takeReaders takes every read connection out of the pool, waiting up to d
// for reads in progress; on timeout it puts back what it took.
func (l *Ledger) takeReaders(d time.Duration) ([]*sqlite.Conn, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	conns := make([]*sqlite.Conn, 0, l.nReaders)
	for len(conns) < l.nReaders {
		select {
		case c := <-l.readers:
			conns = append(conns, c)
		case <-timer.C:
			for _, c := range conns {
				l.readers <- c
			}
			return nil, fmt.Errorf("%d of %d read connections still in use after %s", l.nReaders-len(conns), l.nReaders, d)
		}
	}
	return conns, nil
}

// loseReaders records that only n read connections are in the pool after
// a failed re-creation: reads that find none fail instead of waiting.
func (l *Ledger) loseReaders(n int) {
	l.nReaders = n
	close(l.readersLost)
}

// setAsideForeign renames a file put in place of the database or its -wal
// (another file moved or copied there) to "<name>.replaced-<time>", so
// re-creating the ledger does not destroy it, and returns the new names.
func (l *Ledger) setAsideForeign() []string {
	var moved []string
	stamp := l.now().UTC().Format("20060102T150405.000Z")
	for _, p := range []string{l.path, l.path + "-wal"} {
		if !l.files.foreign(p) {
			continue
		}
		to := p + ".replaced-" + stamp
		if err := os.Rename(p, to); err != nil {
			l.log.Warn("journal: cannot set aside the file put in place of the ledger's; it is replaced", "path", p, "err", err)
			continue
		}
		moved = append(moved, to)
	}
	return moved
}

// installDB moves the copy tmp to path, first removing what is left of the
// old database's -wal, -shm and rollback journal at path (SQLite would
// replay them into the copy).
func installDB(tmp, path string) error {
	if err := removeFiles(path, "-wal", "-shm", "-journal"); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// removeDB removes a database file and its side files, if present.
func removeDB(path string) error { return removeFiles(path, "", "-wal", "-shm", "-journal") }

// removeFiles removes path+suffix for each suffix, if present.
func removeFiles(path string, suffixes ...string) error {
	for _, s := range suffixes {
		if err := os.Remove(path + s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// reopen opens the writer's and n readers' connections on the re-created
// files and watches them.
func (w *writer) reopen(n int) error {
	l := w.l
	conn, err := openWriterConn(context.Background(), l.path, l.opts)
	if err != nil {
		l.loseReaders(0)
		return fmt.Errorf("reopen the writer: %w", classify(err))
	}
	w.conn = conn
	w.rows.clear()
	w.tailKnown = false
	chmodSidecars(l.path)
	for i := range n {
		c, err := openReaderConn(l.path)
		if err != nil {
			l.loseReaders(i)
			return fmt.Errorf("reopen a reader: %w", classify(err))
		}
		l.readers <- c
	}
	if err := l.watch(); err != nil {
		return err
	}
	return nil
}
