package journal

import (
	"fmt"
	"slices"
	"strings"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. Never edit a released entry: append a new one.
var migrations = []string{
	// 1: the ledger.
	`
CREATE TABLE comms_journal (
  row_id INTEGER PRIMARY KEY,
  message_id TEXT UNIQUE NOT NULL,
  session_id TEXT NOT NULL DEFAULT '',
  sender_role TEXT NOT NULL DEFAULT '',
  target_role TEXT NOT NULL DEFAULT '',
  channel TEXT NOT NULL DEFAULT '',
  direction TEXT NOT NULL DEFAULT 'outbound',
  seq INTEGER,
  header TEXT NOT NULL DEFAULT '',
  priority TEXT NOT NULL DEFAULT 'normal',
  sent_at_ms INTEGER,
  brokered_at_ms INTEGER,
  raw_body TEXT NOT NULL DEFAULT '',
  body_hash TEXT NOT NULL DEFAULT '',
  body_bytes INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  ack_status TEXT NOT NULL DEFAULT '',
  error_code TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL DEFAULT 0,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  updated_at_ms INTEGER NOT NULL
);
CREATE INDEX comms_journal_session ON comms_journal(session_id, row_id);
CREATE INDEX comms_journal_target_status ON comms_journal(target_role, status);
CREATE INDEX comms_journal_status ON comms_journal(status, row_id);
CREATE INDEX comms_journal_sender_seq ON comms_journal(sender_role, session_id, seq);

CREATE TABLE comms_events (
  event_id INTEGER PRIMARY KEY,
  message_id TEXT NOT NULL,
  event TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  detail_json TEXT NOT NULL DEFAULT '{}',
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE INDEX comms_events_message ON comms_events(message_id);

CREATE TABLE comms_signals (
  signal_id INTEGER PRIMARY KEY,
  message_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  sender_role TEXT NOT NULL,
  ref TEXT NOT NULL,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  resolved_by TEXT
);
CREATE INDEX comms_signals_session_ref ON comms_signals(session_id, ref);
CREATE INDEX comms_signals_message ON comms_signals(message_id);

CREATE TABLE comms_obligations (
  obligation_id INTEGER PRIMARY KEY,
  message_id TEXT UNIQUE NOT NULL,
  session_id TEXT NOT NULL,
  owner_role TEXT NOT NULL,
  requester_role TEXT NOT NULL,
  ref TEXT NOT NULL,
  opened_at_ms INTEGER NOT NULL,
  reminded_at_ms INTEGER,
  closed_by TEXT,
  closed_at_ms INTEGER
);
CREATE INDEX comms_obligations_open ON comms_obligations(session_id, owner_role, ref) WHERE closed_by IS NULL;

CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE VIRTUAL TABLE comms_fts USING fts5(raw_body, content='comms_journal', content_rowid='row_id');
`,
	// 2: lighter writes. Queries only ever look for brokered (pending) and
	// failed rows by status, so small partial indexes replace two full
	// ones, and the (sender, session, seq) index, which no routing or report
	// query uses, goes: three fewer b-tree updates per append and per
	// status change on the hot path. The pending index is in row order
	// (newest-first and oldest-first walks need no sort) and covers
	// target_role, so per-target lookups scan only the pending rows.
	`
DROP INDEX comms_journal_target_status;
DROP INDEX comms_journal_status;
DROP INDEX comms_journal_sender_seq;
CREATE INDEX comms_journal_pending ON comms_journal(row_id, target_role) WHERE status = '` + string(status.Brokered) + `';
CREATE INDEX comms_journal_failed ON comms_journal(row_id) WHERE status = '` + string(status.Failed) + `';
`,
	// 3: running per-session counts. One row per (session, status,
	// channel, sender) group of comms_journal: how many messages it holds
	// (n) and the highest seq (NULL as 0, never below 0) of any message
	// that was ever in it. The writer keeps them in the transaction that
	// inserts a message or changes its status (see counts.go), so the
	// handoff's Coverage and the briefing's previous-session counts read a
	// few rows instead of counting a session's messages. A group whose
	// messages all moved on keeps its row with n = 0. Existing ledgers are
	// backfilled here; hm journal verify recounts.
	`
CREATE TABLE comms_session_counts (
  session_id TEXT NOT NULL,
  status TEXT NOT NULL,
  channel TEXT NOT NULL,
  sender_role TEXT NOT NULL,
  n INTEGER NOT NULL,
  max_seq INTEGER NOT NULL,
  PRIMARY KEY (session_id, status, channel, sender_role)
) WITHOUT ROWID;
INSERT INTO comms_session_counts(session_id, status, channel, sender_role, n, max_seq)
  SELECT session_id, status, channel, sender_role, count(*), max(coalesce(max(seq), 0), 0)
  FROM comms_journal GROUP BY session_id, status, channel, sender_role;
`,
	// 4: the reports list a session's newest signals, open TASK/BLOCKER
	// signals, DECISIONs and open obligations. These indexes hold them in
	// id order per session, so a LIMITed list walks back from the newest
	// instead of reading and sorting all of a large session's rows. Only
	// messages with tagged lines or [ACK REQUIRED] write them.
	`
CREATE INDEX IF NOT EXISTS comms_signals_session ON comms_signals(session_id);
CREATE INDEX IF NOT EXISTS comms_signals_decisions ON comms_signals(session_id) WHERE kind = 'DECISION';
CREATE INDEX IF NOT EXISTS comms_signals_open ON comms_signals(session_id) WHERE kind IN ('TASK', 'BLOCKER') AND resolved_by IS NULL;
CREATE INDEX IF NOT EXISTS comms_obligations_open_session ON comms_obligations(session_id) WHERE closed_by IS NULL;
`,
	// 5: listener delivery is at-least-once until message-ack (SPEC §5.3):
	// rows handed to a listener and not acknowledged are offered again to
	// the role's next listener, so they get their own small partial index,
	// like the pending one.
	`
CREATE INDEX IF NOT EXISTS comms_journal_unacked ON comms_journal(row_id, target_role) WHERE status = '` + string(status.Routed) + `' AND ack_status = '` + string(status.DeliveredWebSocket) + `';
`,
	// 6: SquidRun compatibility (docs/operations.md, "Coming from
	// SquidRun"). SquidRun's tools open the same file and rebuild any
	// comms_journal whose CREATE TABLE lacks their CHECK lists (dropping
	// hm's columns), and their upserts write NULL into columns hm keeps NOT
	// NULL. The table is rebuilt once, same columns in the same order, with
	// SquidRun's CHECK lists (plus hm's channels) and NOT NULL ON CONFLICT
	// REPLACE, so a NULL written by another program becomes the column's
	// default instead of failing.
	squidRunCompatJournal,
	// 7: hm status and the handoff list messages stuck at a pane
	// (ack_status stuck: typed but never shown, or never submitted).
	`CREATE INDEX comms_journal_stuck ON comms_journal(row_id) WHERE ack_status = '` + string(status.Stuck) + `';`,
	// 8: the briefing lists the failures since the previous session began,
	// also of rows older than that session (a message an earlier session
	// left pending that expires at this start): failed rows by the time of
	// their last change.
	`CREATE INDEX IF NOT EXISTS comms_journal_failed_at ON comms_journal(updated_at_ms, row_id) WHERE status = '` + string(status.Failed) + `';`,
	// 9: the reports read a covered message's first change again (Cover:
	// the signals it resolved), and verify does for every message: the
	// signals a message resolved, by resolved_by. Without it each look
	// read the whole signals table (a handoff on 1M messages took 1.3 s).
	`CREATE INDEX IF NOT EXISTS comms_signals_resolved ON comms_signals(resolved_by) WHERE resolved_by IS NOT NULL;`,
}

// squidRunCompatJournal is migration 6; see SquidRunChannels.
var squidRunCompatJournal = `
CREATE TABLE comms_journal_v6 (
  row_id INTEGER PRIMARY KEY,
  message_id TEXT UNIQUE NOT NULL,
  session_id TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  sender_role TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  target_role TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  channel TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '' CHECK (` + sqlAnyOf("channel", channelCheck) + `),
  direction TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'outbound' CHECK (` + sqlAnyOf("direction", []string{"inbound", "outbound"}) + `),
  seq INTEGER,
  header TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  priority TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'normal',
  sent_at_ms INTEGER,
  brokered_at_ms INTEGER,
  raw_body TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  body_hash TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  body_bytes INTEGER NOT NULL ON CONFLICT REPLACE DEFAULT 0,
  status TEXT NOT NULL CHECK (` + sqlAnyOf("status", statusCheck()) + `),
  ack_status TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  error_code TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '',
  attempt INTEGER NOT NULL ON CONFLICT REPLACE DEFAULT 0,
  metadata_json TEXT NOT NULL ON CONFLICT REPLACE DEFAULT '{}',
  updated_at_ms INTEGER NOT NULL
);
INSERT INTO comms_journal_v6 SELECT row_id, message_id, session_id, sender_role, target_role, channel, direction, seq, header, priority,
  sent_at_ms, brokered_at_ms, raw_body, body_hash, body_bytes, status, ack_status, error_code, attempt, metadata_json, updated_at_ms
  FROM comms_journal;
DROP TABLE comms_journal;
ALTER TABLE comms_journal_v6 RENAME TO comms_journal;
CREATE INDEX comms_journal_session ON comms_journal(session_id, row_id);
CREATE INDEX comms_journal_pending ON comms_journal(row_id, target_role) WHERE status = '` + string(status.Brokered) + `';
CREATE INDEX comms_journal_failed ON comms_journal(row_id) WHERE status = '` + string(status.Failed) + `';
CREATE INDEX comms_journal_unacked ON comms_journal(row_id, target_role) WHERE status = '` + string(status.Routed) + `' AND ack_status = '` + string(status.DeliveredWebSocket) + `';
`

// SquidRunChannels is SquidRun's comms_journal channel CHECK list. Its
// migration rebuilds a comms_journal whose CREATE TABLE text lacks 'voice'
// or 'system'; hm's table lists all of these.
var SquidRunChannels = []string{"ws", "telegram", "sms", "user", "voice", "system"}

// channelCheck is the channel CHECK list of hm's comms_journal: SquidRun's
// channels, then hm's own ("trigger"; "" for rows that name none).
var channelCheck = append(slices.Clip(SquidRunChannels), "trigger", "")

func statusCheck() []string {
	out := make([]string, len(status.Statuses))
	for i, s := range status.Statuses {
		out[i] = string(s)
	}
	return out
}

// sqlList quotes words for an SQL IN list: 'a', 'b'.
// sqlAnyOf is a CHECK expression that col is one of words, written as
// equalities joined by OR rather than "col IN (...)": SQLite builds an
// ephemeral b-tree for an IN list each time the statement runs, which made
// every insert and status change of comms_journal build two (a third of
// the write path's time).
func sqlAnyOf(col string, words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = col + " = '" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return strings.Join(q, " OR ")
}

// latestSchema is the schema version this package writes and expects.
var latestSchema = len(migrations)

// migrate brings the database on conn up to latestSchema, one IMMEDIATE
// transaction per migration.
func migrate(conn *sqlite.Conn) error {
	if err := sqlitex.ExecuteTransient(conn, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`, nil); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for {
		v, err := schemaVersion(conn)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this program (%d)", v, len(migrations))
		}
		if v == len(migrations) {
			return nil
		}
		if err := applyMigration(conn, v); err != nil {
			return err
		}
	}
}

func applyMigration(conn *sqlite.Conn, from int) (err error) {
	if err := sqlitex.ExecuteTransient(conn, "BEGIN IMMEDIATE", nil); err != nil {
		return fmt.Errorf("migrate to %d: begin: %w", from+1, err)
	}
	defer func() {
		if err != nil {
			_ = sqlitex.ExecuteTransient(conn, "ROLLBACK", nil)
		}
	}()
	// Re-check inside the write lock: another process may have migrated.
	v, err := schemaVersion(conn)
	if err != nil {
		return err
	}
	if v != from {
		return sqlitex.ExecuteTransient(conn, "COMMIT", nil)
	}
	if err := sqlitex.ExecuteScript(conn, migrations[from], nil); err != nil {
		return fmt.Errorf("migrate to %d: %w", from+1, err)
	}
	if err := sqlitex.ExecuteTransient(conn, "DELETE FROM schema_version", nil); err != nil {
		return fmt.Errorf("migrate to %d: %w", from+1, err)
	}
	if err := sqlitex.ExecuteTransient(conn, "INSERT INTO schema_version(version) VALUES (?)", &sqlitex.ExecOptions{Args: []any{from + 1}}); err != nil {
		return fmt.Errorf("migrate to %d: %w", from+1, err)
	}
	if err := sqlitex.ExecuteTransient(conn, "COMMIT", nil); err != nil {
		return fmt.Errorf("migrate to %d: commit: %w", from+1, err)
	}
	return nil
}

func schemaVersion(conn *sqlite.Conn) (int, error) {
	v := 0
	err := sqlitex.ExecuteTransient(conn, "SELECT max(version) FROM schema_version", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			v = stmt.ColumnInt(0)
			return nil
		},
	})
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
