package journal

// Opening SQLite connections: the database file, the writer connection
// (identify, pragmas, migration, size limit) and the read-only readers.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// createFile makes the parent directory (0700) and the database file (0600)
// if they do not exist yet.
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

// chmodSidecars narrows -wal and -shm to 0600 when present (best effort;
// SQLite normally copies the database file's mode already).
func chmodSidecars(path string) {
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Chmod(path+s, 0o600)
	}
}

func openWriterConn(ctx context.Context, path string, opts Options) (conn *sqlite.Conn, err error) {
	conn, err = sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			conn.Close()
			conn = nil
		}
	}()
	conn.SetBusyTimeout(5 * time.Second)
	if ctx.Done() != nil {
		conn.SetInterrupt(ctx.Done())
		defer conn.SetInterrupt(nil)
	}
	// Whose database is it? Nothing is written before this answer.
	kind, err := identify(conn)
	if err != nil {
		return nil, err
	}
	// Pragmas run outside any transaction.
	mode := ""
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA journal_mode=WAL", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { mode = stmt.ColumnText(0); return nil },
	}); err != nil {
		return nil, fmt.Errorf("journal_mode: %w", err)
	}
	if mode != "wal" {
		opts.Logger.Warn("journal: WAL mode not available", "journal_mode", mode, "path", path)
	}
	sync := "NORMAL"
	if opts.Durable {
		sync = "FULL"
	}
	for _, p := range []string{"PRAGMA synchronous=" + sync, "PRAGMA busy_timeout=5000", "PRAGMA temp_store=MEMORY",
		"PRAGMA wal_autocheckpoint=0" /* the writer checkpoints itself */} {
		if err := sqlitex.ExecuteTransient(conn, p, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if kind == kindSquidRun {
		opts.Logger.Warn("journal: adopting a SquidRun evidence ledger: its tables stay, its comms_journal (if any) is kept as "+squidRunJournal, "path", path)
		if err := adoptSquidRun(conn); err != nil {
			return nil, err
		}
	}
	if err := migrate(conn); err != nil {
		return nil, err
	}
	if err := markLedger(conn); err != nil {
		return nil, err
	}
	if err := setMaxPages(conn, opts.MaxBytes); err != nil {
		return nil, err
	}
	return conn, nil
}

// maxPageCountUnlimited is SQLite's default (and largest) max_page_count.
const maxPageCountUnlimited = 4294967294

func setMaxPages(conn *sqlite.Conn, maxBytes int64) error {
	pageSize := int64(4096)
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA page_size", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { pageSize = stmt.ColumnInt64(0); return nil },
	}); err != nil {
		return fmt.Errorf("page_size: %w", err)
	}
	pages := int64(maxPageCountUnlimited)
	if maxBytes > 0 {
		pages = max(1, maxBytes/pageSize)
	}
	if err := sqlitex.ExecuteTransient(conn, fmt.Sprintf("PRAGMA max_page_count=%d", pages), nil); err != nil {
		return fmt.Errorf("max_page_count: %w", err)
	}
	return nil
}

func openReaderConn(path string) (*sqlite.Conn, error) {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		return nil, err
	}
	conn.SetBusyTimeout(5 * time.Second)
	for _, p := range []string{"PRAGMA query_only=ON", "PRAGMA busy_timeout=5000", "PRAGMA temp_store=MEMORY"} {
		if err := sqlitex.ExecuteTransient(conn, p, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return conn, nil
}

// openCheckpointConn opens the checkpointer's connection.
func openCheckpointConn(path string) (*sqlite.Conn, error) {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		return nil, err
	}
	conn.SetBusyTimeout(5 * time.Second)
	return conn, nil
}

func checkSchema(conn *sqlite.Conn) error {
	if _, err := identify(conn); err != nil {
		return err
	}
	v, err := schemaVersion(conn)
	if err != nil {
		return fmt.Errorf("not a ledger: %w", err)
	}
	if v != latestSchema {
		return fmt.Errorf("ledger schema version %d, want %d", v, latestSchema)
	}
	return nil
}
