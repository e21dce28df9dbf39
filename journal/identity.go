// This file decides, before anything is written, whose database a ledger
// file is: hm's (marked by its SQLite application_id, or by hm's tables in
// ledgers made before the mark), SquidRun's (adopted), new, or another
// program's (refused, untouched).

package journal

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// ApplicationID is hm's SQLite application_id ("hmlg"), set in the header
// of every ledger hm creates or adopts (PRAGMA application_id).
const ApplicationID = 0x686d6c67

// ErrForeign means the file is an SQLite database of another program (a
// different application_id, or tables that are neither hm's nor
// SquidRun's). Nothing was written to it.
var ErrForeign = errors.New("not an hm ledger")

// ledgerKind is what identify found.
type ledgerKind int

const (
	kindNew      ledgerKind = iota // no tables yet
	kindHM                         // hm's application_id or hm's tables
	kindSquidRun                   // a SquidRun evidence ledger, adopted
)

// hmTables mark an hm ledger made before the application_id; squidRunTables
// mark a SquidRun evidence ledger (it creates ledger_events first, and
// comms_journal from its schema v4).
var (
	hmTables       = []string{"schema_version", "comms_journal", "comms_events"}
	squidRunTables = []string{"ledger_events", "comms_journal"}
)

// identify reads the header's application_id and the table names; it
// writes nothing, so a refused file is left exactly as it was.
func identify(conn *sqlite.Conn) (ledgerKind, error) {
	var appID int64
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA application_id", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { appID = stmt.ColumnInt64(0); return nil },
	}); err != nil {
		return 0, fmt.Errorf("read application_id: %w", err)
	}
	var tables []string
	if err := sqlitex.ExecuteTransient(conn, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { tables = append(tables, stmt.ColumnText(0)); return nil },
	}); err != nil {
		return 0, fmt.Errorf("list tables: %w", err)
	}
	switch {
	case appID == ApplicationID:
		return kindHM, nil
	case appID != 0:
		return 0, fmt.Errorf("%w: application_id is %#x, hm's is %#x (another program's database)", ErrForeign, appID, ApplicationID)
	case len(tables) == 0:
		return kindNew, nil
	case containsAll(tables, hmTables):
		return kindHM, nil
	case slices.Contains(tables, squidRunTables[0]) || slices.Contains(tables, squidRunTables[1]) && !slices.Contains(tables, "schema_version"):
		return kindSquidRun, nil
	}
	shown := tables
	if len(shown) > 8 {
		shown = append(slices.Clip(shown[:8]), "...")
	}
	return 0, fmt.Errorf("%w: it holds tables %s and none of hm's or SquidRun's (another program's database)", ErrForeign, strings.Join(shown, ", "))
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// squidRunJournal is where adoptSquidRun keeps a SquidRun comms_journal
// (its rows have no hm events, header or seq): renamed, never deleted.
const squidRunJournal = "squidrun_comms_journal"

// adoptSquidRun prepares a SquidRun evidence ledger for hm's migrations:
// SquidRun's own tables stay as they are; its comms_journal, if it is not
// hm's, is renamed to squidrun_comms_journal so hm's can be created. It
// runs in one IMMEDIATE transaction.
func adoptSquidRun(conn *sqlite.Conn) (err error) {
	if err := sqlitex.ExecuteTransient(conn, "BEGIN IMMEDIATE", nil); err != nil {
		return fmt.Errorf("adopt SquidRun ledger: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = sqlitex.ExecuteTransient(conn, "ROLLBACK", nil)
		}
	}()
	hasHeader := false
	hasTable := false
	if err := sqlitex.ExecuteTransient(conn, "SELECT name FROM pragma_table_info('comms_journal')", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			hasTable = true
			hasHeader = hasHeader || stmt.ColumnText(0) == "header"
			return nil
		},
	}); err != nil {
		return fmt.Errorf("adopt SquidRun ledger: %w", err)
	}
	if hasTable && !hasHeader {
		// SquidRun's indexes on comms_journal follow the rename; drop them
		// so hm's table can be created with SquidRun's names free (SquidRun
		// recreates them IF NOT EXISTS on hm's table).
		var idx []string
		if err := sqlitex.ExecuteTransient(conn, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'comms_journal' AND sql IS NOT NULL", &sqlitex.ExecOptions{
			ResultFunc: func(stmt *sqlite.Stmt) error { idx = append(idx, stmt.ColumnText(0)); return nil },
		}); err != nil {
			return fmt.Errorf("adopt SquidRun ledger: %w", err)
		}
		for _, name := range idx {
			if err := sqlitex.ExecuteTransient(conn, `DROP INDEX "`+strings.ReplaceAll(name, `"`, `""`)+`"`, nil); err != nil {
				return fmt.Errorf("adopt SquidRun ledger: drop index %s: %w", name, err)
			}
		}
		if err := sqlitex.ExecuteTransient(conn, "ALTER TABLE comms_journal RENAME TO "+squidRunJournal, nil); err != nil {
			return fmt.Errorf("adopt SquidRun ledger: keep its comms_journal: %w", err)
		}
	}
	if err := sqlitex.ExecuteTransient(conn, "COMMIT", nil); err != nil {
		return fmt.Errorf("adopt SquidRun ledger: commit: %w", err)
	}
	return nil
}

// markLedger sets hm's application_id (once; it is a header field, so
// SquidRun's tools leave it alone).
func markLedger(conn *sqlite.Conn) error {
	var appID int64
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA application_id", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { appID = stmt.ColumnInt64(0); return nil },
	}); err != nil {
		return fmt.Errorf("read application_id: %w", err)
	}
	if appID == ApplicationID {
		return nil
	}
	if err := sqlitex.ExecuteTransient(conn, fmt.Sprintf("PRAGMA application_id=%d", ApplicationID), nil); err != nil {
		return fmt.Errorf("set application_id: %w", err)
	}
	return nil
}
