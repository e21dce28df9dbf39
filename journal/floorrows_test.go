package journal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/journal"
)

// TestFloorRowsAreTheLedgers holds the SQLite floors of #36 to what they
// claim: a message written by floorRows (brokered, then delivered and
// acked) has the ledger's rows, column for column the same type and size,
// as the same message appended and advanced through the ledger. A floor
// with smaller rows would flatter itself.
func TestFloorRowsAreTheLedgers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := journal.Open(ctx, path, journal.Options{Logger: benchLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 { // seq and body sizes of one and two digits
		id := fmt.Sprint("fr-", i)
		if _, err := l.Append(ctx, lifecycleMessage(id, i)); err != nil {
			t.Fatal(err)
		}
		for _, c := range lifecycleChanges(id) {
			if _, err := l.Advance(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f := newFloorRows(t)
	rawExec(t, f.conn, "BEGIN IMMEDIATE")
	for i := range 12 {
		id, row := f.insert("fr-", i)
		f.settle(id, row)
	}
	rawExec(t, f.conn, "COMMIT")
	ledger := rawConn(t, path)
	for _, table := range []string{"comms_journal", "comms_events"} {
		want, got := columnSizes(t, ledger, table), columnSizes(t, f.conn, table)
		if len(want) != 36 && table == "comms_events" || len(want) != 12 && table == "comms_journal" {
			t.Fatalf("the ledger has %d rows in %s", len(want), table)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: floorRows wrote rows of other types or sizes than the ledger's\nfloor:\n%s\nledger:\n%s", table, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// columnSizes lists table's rows in order, each as its columns' types and
// sizes (length of the value as text; NULL as null).
func columnSizes(t *testing.T, conn *sqlite.Conn, table string) []string {
	t.Helper()
	var cols []string
	err := sqlitex.Execute(conn, "SELECT name FROM pragma_table_info(?)", &sqlitex.ExecOptions{Args: []any{table},
		ResultFunc: func(s *sqlite.Stmt) error { cols = append(cols, s.ColumnText(0)); return nil }})
	if err != nil || len(cols) == 0 {
		t.Fatalf("columns of %s: %v", table, err)
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = fmt.Sprintf("'%s=' || typeof(%s) || ':' || coalesce(length(%s), 0)", c, c, c)
	}
	var rows []string
	err = sqlitex.Execute(conn, "SELECT "+strings.Join(exprs, " || ' ' || ")+" FROM "+table+" ORDER BY rowid", &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { rows = append(rows, s.ColumnText(0)); return nil }})
	if err != nil {
		t.Fatalf("rows of %s: %v", table, err)
	}
	return rows
}
