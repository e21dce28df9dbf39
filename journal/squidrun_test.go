package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// rawExec runs a script on its own connection to path (another program).
func rawExec(t *testing.T, path, script string, args ...any) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(5 * time.Second)
	if len(args) > 0 {
		if err := sqlitex.Execute(conn, script, &sqlitex.ExecOptions{Args: args}); err != nil {
			t.Fatalf("exec %q: %v", script, err)
		}
		return
	}
	if err := sqlitex.ExecuteScript(conn, script, nil); err != nil {
		t.Fatalf("exec script: %v", err)
	}
}

// rawQuery returns the rows of query as strings.
func rawQuery(t *testing.T, path, query string, args ...any) [][]string {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer conn.Close()
	var out [][]string
	err = sqlitex.Execute(conn, query, &sqlitex.ExecOptions{Args: args, ResultFunc: func(stmt *sqlite.Stmt) error {
		row := make([]string, stmt.ColumnCount())
		for i := range row {
			row[i] = stmt.ColumnText(i)
		}
		out = append(out, row)
		return nil
	}})
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	return out
}

// TestForeignLedgerRefused: a database of another program at the ledger's
// path is refused at open with an error naming the file, and the file is
// left byte for byte as it was (no WAL switch, no hm tables, no sidecars).
// Before the fix hm ran its migrations into any database it found.
func TestForeignLedgerRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, want string
	}{
		{"other tables", "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers(name) VALUES ('ada');", "customers"},
		{"other application id", "PRAGMA application_id=1234; CREATE TABLE t(x);", "application_id is 0x4d2"},
		{"other application id, no tables", "PRAGMA application_id=99;", "application_id is 0x63"},
		{"a schema_version alone", "CREATE TABLE schema_version(version INTEGER); INSERT INTO schema_version VALUES (3);", "schema_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			rawExec(t, path, tc.script)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st0, _ := os.Stat(path)
			for _, ro := range []bool{false, true} {
				l, err := Open(context.Background(), path, Options{ReadOnly: ro, Logger: testLogger(t)})
				if err == nil {
					l.Close()
					t.Fatalf("Open(ReadOnly=%v) of a foreign database succeeded", ro)
				}
				if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open(ReadOnly=%v) error = %v; want ErrForeign naming %s and %q", ro, err, path, tc.want)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st1, _ := os.Stat(path)
			if !bytes.Equal(before, after) || !st1.ModTime().Equal(st0.ModTime()) {
				t.Fatalf("the foreign database was modified by the refused open")
			}
			for _, s := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Stat(path + s); err == nil {
					t.Fatalf("the refused open left %s behind", path+s)
				}
			}
		})
	}
}

func applicationID(t *testing.T, path string) string {
	t.Helper()
	return rawQuery(t, path, "PRAGMA application_id")[0][0]
}

// TestLedgerMarkedAndAdopted: new ledgers carry hm's application_id; an hm
// ledger made before the mark is recognised by its tables and marked.
func TestLedgerMarkedAndAdopted(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "evidence-ledger.db")
	l := openAt(t, path, Options{})
	if _, err := l.Append(ctx, msg("m1", "architect", "builder", 1, "hi")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := applicationID(t, path); got != "1752001639" {
		t.Fatalf("application_id = %s, want %d", got, ApplicationID)
	}
	rawExec(t, path, "PRAGMA application_id=0")
	l = openAt(t, path, Options{})
	if _, err := l.Get(ctx, "m1"); err != nil {
		t.Fatalf("reopened pre-mark ledger: %v", err)
	}
	l.Close()
	if got := applicationID(t, path); got != "1752001639" {
		t.Fatalf("adopted ledger application_id = %s, want %d", got, ApplicationID)
	}
}

// squidRunV4 is SquidRun's comms_journal as its evidence-ledger store
// creates it (columns and CHECK lists as read in anamnesos/SquidRun
// ui/modules/main/evidence-ledger-store.js, schema v4), with its first
// table, ledger_events, reduced to a few columns.
const squidRunV4 = `
CREATE TABLE ledger_events (row_id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, payload_json TEXT NOT NULL);
INSERT INTO ledger_events(event_id, payload_json) VALUES ('e1', '{}');
CREATE TABLE comms_journal (
  row_id INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL UNIQUE,
  session_id TEXT, sender_role TEXT, target_role TEXT,
  channel TEXT NOT NULL CHECK (channel IN ('ws', 'telegram', 'sms', 'user', 'voice', 'system')),
  direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  sent_at_ms INTEGER, brokered_at_ms INTEGER, raw_body TEXT, body_hash TEXT, body_bytes INTEGER,
  status TEXT NOT NULL CHECK (status IN ('recorded', 'brokered', 'routed', 'acked', 'failed')),
  ack_status TEXT, error_code TEXT, attempt INTEGER, metadata_json TEXT DEFAULT '{}', updated_at_ms INTEGER NOT NULL
);
CREATE INDEX idx_comms_journal_status ON comms_journal(status);
INSERT INTO comms_journal(message_id, channel, direction, status, raw_body, updated_at_ms) VALUES ('sq-1', 'ws', 'outbound', 'acked', 'old', 1);
`

// squidRunIndexes are the indexes SquidRun's schema v4 creates (IF NOT
// EXISTS) on comms_journal every time it opens the ledger.
var squidRunIndexes = []string{
	"CREATE INDEX IF NOT EXISTS idx_comms_journal_session_brokered ON comms_journal(session_id, brokered_at_ms)",
	"CREATE INDEX IF NOT EXISTS idx_comms_journal_status ON comms_journal(status)",
	"CREATE INDEX IF NOT EXISTS idx_comms_journal_sender_brokered ON comms_journal(sender_role, brokered_at_ms)",
	"CREATE INDEX IF NOT EXISTS idx_comms_journal_event_ts ON comms_journal(COALESCE(brokered_at_ms, sent_at_ms, updated_at_ms), row_id)",
	"CREATE INDEX IF NOT EXISTS idx_comms_journal_session_event_ts ON comms_journal(session_id, COALESCE(brokered_at_ms, sent_at_ms, updated_at_ms), row_id)",
}

// TestAdoptSquidRunLedger: a SquidRun evidence ledger is adopted, not
// refused; its tables stay and its comms_journal rows are kept.
func TestAdoptSquidRunLedger(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "evidence-ledger.db")
	rawExec(t, path, squidRunV4)
	l := openAt(t, path, Options{})
	if _, err := l.Append(ctx, msg("m1", "architect", "builder", 1, "hi")); err != nil {
		t.Fatalf("Append on an adopted SquidRun ledger: %v", err)
	}
	l.Close()
	if got := rawQuery(t, path, "SELECT message_id, raw_body FROM "+squidRunJournal); len(got) != 1 || got[0][0] != "sq-1" {
		t.Fatalf("SquidRun's comms_journal rows = %v, want sq-1 kept", got)
	}
	if got := rawQuery(t, path, "SELECT count(*) FROM ledger_events"); got[0][0] != "1" {
		t.Fatalf("ledger_events = %v, want SquidRun's row kept", got)
	}
	if got := applicationID(t, path); got != "1752001639" {
		t.Fatalf("application_id = %s", got)
	}
}

// squidRunRebuilds is SquidRun's comms_journal migration rule: it rebuilds
// the table (keeping only its own columns) unless the table's CREATE TABLE
// text names both 'voice' and 'system'.
func squidRunRebuilds(createSQL string) bool {
	return createSQL != "" && !(strings.Contains(createSQL, "'voice'") && strings.Contains(createSQL, "'system'"))
}

// TestSquidRunToolsLeaveJournalIntact applies, against hm's ledger, what
// SquidRun's tools do to it: the migration rule, the IF NOT EXISTS schema
// and indexes, the pre-send upsert of hm-send.js (NULLs in columns hm keeps
// NOT NULL) and its later UPDATE. hm's table must survive all of it, the
// hub's row must replace the pre-send record, and SquidRun's route-proof
// query must find the routed row. Before the fix hm's CREATE TABLE had no
// CHECK lists (SquidRun rebuilt the table and dropped seq, header and
// priority) and the pre-send record made the hub's Append a duplicate.
func TestSquidRunToolsLeaveJournalIntact(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "evidence-ledger.db")
	l := openAt(t, path, Options{})
	if _, err := l.Append(ctx, msg("hm-1", "architect", "builder", 1, "first")); err != nil {
		t.Fatal(err)
	}
	l.Close()

	sql := rawQuery(t, path, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'comms_journal'")[0][0]
	if squidRunRebuilds(sql) {
		t.Fatalf("SquidRun's migration would rebuild hm's comms_journal (its CREATE TABLE lacks 'voice'/'system'):\n%s", sql)
	}
	for _, want := range [][]string{SquidRunChannels, {"inbound", "outbound"}, {"recorded", "brokered", "routed", "acked", "failed"}} {
		for _, w := range want {
			if !strings.Contains(sql, "'"+w+"'") {
				t.Fatalf("hm's comms_journal CHECK lists lack SquidRun's %q:\n%s", w, sql)
			}
		}
	}
	for _, s := range squidRunIndexes {
		rawExec(t, path, s)
	}

	// hm-send.js records the message before sending it: its columns only,
	// NULL where it has nothing (session, ack_status, error_code ...).
	const insert = `INSERT INTO comms_journal (message_id, session_id, sender_role, target_role, channel, direction,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	rawExec(t, path, insert, "sq-2", nil, "cli", "builder", "ws", "outbound", 1000, nil, "hello", nil, 5, "recorded", nil, nil, 1, `{"source":"hm-send"}`, 1000)
	// ... and the same row updated (its upsert's UPDATE form).
	rawExec(t, path, `UPDATE comms_journal SET session_id = ?, ack_status = ?, error_code = ?, attempt = ?, updated_at_ms = ? WHERE message_id = ?`,
		nil, nil, nil, nil, 1001, "sq-2")

	l = openAt(t, path, Options{})
	for _, c := range []string{"seq", "header", "priority"} {
		if got := rawQuery(t, path, "SELECT count(*) FROM pragma_table_info('comms_journal') WHERE name = ?", c); got[0][0] != "1" {
			t.Fatalf("hm's column %s is gone", c)
		}
	}
	m := msg("sq-2", "architect", "builder", 2, "hello")
	m.SessionID = "app-session-3"
	got, err := l.Append(ctx, m)
	if err != nil {
		t.Fatalf("the hub's Append of a message hm-send.js pre-recorded: %v", err)
	}
	if got.Status != status.Brokered || got.Seq != 2 || got.Header != "ARCH" {
		t.Fatalf("Append = %+v, want the hub's brokered row", got)
	}
	if _, err := l.Advance(ctx, Change{MessageID: "sq-2", Status: status.Routed, AckStatus: status.Typed}); err != nil {
		t.Fatal(err)
	}
	// A message hm wrote itself is still a duplicate.
	if _, err := l.Append(ctx, msg("hm-1", "architect", "builder", 1, "first")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("re-Append of hm's own row: %v, want ErrDuplicate", err)
	}
	l.Close()

	// hm-send.js's route proof: the newest row for its message id must be
	// outbound, in its session (app-status.json's session N is
	// "app-session-N") and routed or acked.
	proof := rawQuery(t, path, `SELECT status, direction, session_id FROM comms_journal WHERE message_id = ?
 ORDER BY COALESCE(brokered_at_ms, sent_at_ms, updated_at_ms) DESC, row_id DESC LIMIT ?`, "sq-2", 1)
	if len(proof) != 1 || !slices.Contains([]string{"routed", "acked"}, proof[0][0]) || proof[0][1] != "outbound" || proof[0][2] != "app-session-3" {
		t.Fatalf("route proof row = %v, want [routed|acked outbound app-session-3]", proof)
	}
}

// TestVerifySquidRunRecords: SquidRun's hm-send.js records each message
// (status recorded, no event) before sending it; a record the hub never
// took over (the hub refused the message, or has not read its trigger file
// yet) is another program's row, not tampering: verify counts it as
// foreign and says ok. A row that claims more than that with no event is
// still reported. Before the fix a left-over record failed verify ("no
// brokered event", and the session counts).
func TestVerifySquidRunRecords(t *testing.T) {
	t.Parallel()
	const insert = `INSERT INTO comms_journal (message_id, session_id, sender_role, target_role, channel, direction,
 sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	tests := []struct {
		name        string
		status      string
		adopt       bool // the hub then appends the same message id
		wantOK      bool
		wantForeign int64
		wantFirst   string
	}{
		{"record left alone", "recorded", false, true, 1, ""},
		{"record taken over by the hub", "recorded", true, true, 0, ""},
		{"brokered row with no event", "brokered", false, false, 0, "comms_journal row_id 2 (message_id sq-2): no brokered event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "evidence-ledger.db")
			l := openAt(t, path, Options{})
			if _, err := l.Append(ctx, msg("hm-1", "architect", "builder", 1, "first")); err != nil {
				t.Fatal(err)
			}
			l.Close()
			for _, s := range squidRunIndexes {
				rawExec(t, path, s)
			}
			rawExec(t, path, insert, "sq-2", nil, "cli", "builder", "ws", "outbound", 1000, nil, "hello", nil, 5, tt.status, nil, nil, 1, `{"source":"hm-send"}`, 1000)
			l = openAt(t, path, Options{})
			if tt.adopt {
				if _, err := l.Append(ctx, msg("sq-2", "architect", "builder", 2, "hello")); err != nil {
					t.Fatal(err)
				}
			}
			r, err := l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK != tt.wantOK || r.Foreign != tt.wantForeign || !strings.HasPrefix(r.FirstBad, tt.wantFirst) {
				t.Fatalf("Verify = %+v, want ok %v, foreign %d, first bad %q", r, tt.wantOK, tt.wantForeign, tt.wantFirst)
			}
		})
	}
}
