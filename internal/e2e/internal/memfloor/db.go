//go:build !nosqlite

package main

import (
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// openDB opens the database at path, writes a row and reads it back.
func openDB(path string) (closeDB func(), err error) {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	for _, q := range []string{
		"PRAGMA synchronous=NORMAL",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO t(body) VALUES ('one row')",
	} {
		if err := sqlitex.ExecuteTransient(conn, q, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	n := 0
	if err := sqlitex.ExecuteTransient(conn, "SELECT count(*) FROM t", &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { n = s.ColumnInt(0); return nil },
	}); err != nil || n != 1 {
		conn.Close()
		return nil, fmt.Errorf("read back: %d rows, %v", n, err)
	}
	return func() { conn.Close() }, nil
}
