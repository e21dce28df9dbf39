package journal

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// tamperFixture writes a ledger with signals, a closed and an open
// [ACK REQUIRED] obligation, a reminder, status changes and a last message
// alone at the tail:
//
//	events: 1 brokered m0, 2 brokered m1, 3 brokered m2, 4 brokered m3,
//	5 obligation_closed m0, 6 brokered m4, 7 obligation_reminded m4,
//	8..10 routed m0..m2, 11 brokered m5
//	rows: m0..m5 = row_id 1..6; signals: 1 DECISION (m0), 2 TASK (m1,
//	resolved by m3); obligations: 1 (m0, closed by m3), 2 (m4, open)
func tamperFixture(t *testing.T, l *Ledger) {
	t.Helper()
	ctx := ctxT(t)
	m0 := msg("m0", "oracle", "architect", 1, "[ACK REQUIRED] DECISION: use sqlite")
	m0.Signals = []Signal{{Kind: SignalDecision, Text: "use sqlite"}}
	m0.Obligation = &Obligation{OwnerRole: "architect"}
	m0.MetadataJSON = `{"k":"v"}`
	m0.SentAtMs = 1700000000000
	m1 := msg("m1", "architect", "oracle", 1, "TASK: write tests")
	m1.Signals = []Signal{{Kind: SignalTask, Text: "write tests"}}
	m2 := msg("m2", "oracle", "architect", 2, "plain")
	m3 := msg("m3", "architect", "oracle", 2, "re ORACLE #1 and ARCH #1")
	m3.Refs = []string{"ORACLE #1", "ARCH #1"}
	m4 := msg("m4", "oracle", "architect", 3, "[ACK REQUIRED] please answer")
	m4.Obligation = &Obligation{OwnerRole: "architect"}
	for _, m := range []*Message{m0, m1, m2, m3, m4} {
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.MarkReminded(ctx, "m4"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m0", "m1", "m2"} {
		if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(ctx, msg("m5", "builder", "architect", 1, "last")); err != nil {
		t.Fatal(err)
	}
	// The head now names the last event, so the writer (which signs it
	// lazily, head.go) has nothing left to sign over the tampering.
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyTamperingComplete: every change the issue found passing
// `hm journal verify` (columns outside the old hash, reordered rows, fake
// signals, closed obligations, a cut tail with its head rewritten, a chain
// recomputed without the key) is caught and the first bad row named.
func TestVerifyTamperingComplete(t *testing.T) {
	t.Parallel()
	const truncateTail = `DELETE FROM comms_events WHERE event_id = 11;
DELETE FROM comms_journal WHERE message_id = 'm5';
UPDATE comms_session_counts SET n = n - 1 WHERE sender_role = 'builder';
UPDATE kv SET value = (SELECT event_id || ':' || hash FROM comms_events WHERE event_id = 10) WHERE key = 'chain_head';`
	tests := []struct {
		name      string
		tamper    string
		rechain   bool // then recompute the whole chain with the unkeyed rule, as anyone can
		wantFirst string
	}{
		{"sender_role", "UPDATE comms_journal SET sender_role = 'architect' WHERE message_id = 'm2';" + fixCounts("oracle", "architect"), false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"target_role", "UPDATE comms_journal SET target_role = 'builder' WHERE message_id = 'm2'", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"session_id", "UPDATE comms_journal SET session_id = 'app-session-9' WHERE message_id = 'm2';" +
			"UPDATE comms_session_counts SET n = n - 1 WHERE status = 'routed' AND sender_role = 'oracle'; INSERT INTO comms_session_counts VALUES ('app-session-9', 'routed', 'ws', 'oracle', 1, 2);", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"seq", "UPDATE comms_journal SET seq = 3 WHERE message_id = 'm2'", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"sent_at_ms", "UPDATE comms_journal SET sent_at_ms = 1 WHERE message_id = 'm0'", false,
			"comms_events event_id 1 (message_id m0): hash mismatch"},
		{"channel", "UPDATE comms_journal SET channel = 'telegram' WHERE message_id = 'm2';" +
			"UPDATE comms_session_counts SET n = n - 1 WHERE status = 'routed' AND sender_role = 'oracle'; INSERT INTO comms_session_counts VALUES ('app-session-1', 'routed', 'telegram', 'oracle', 1, 2);", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"metadata", `UPDATE comms_journal SET metadata_json = '{"k":"forged"}' WHERE message_id = 'm0'`, false,
			"comms_events event_id 1 (message_id m0): hash mismatch"},
		{"header", "UPDATE comms_journal SET header = 'ARCH' WHERE message_id = 'm2'", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"priority", "UPDATE comms_journal SET priority = 'urgent' WHERE message_id = 'm2'", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"error_code", "UPDATE comms_journal SET error_code = 'pane_failed' WHERE message_id = 'm2'", false,
			"comms_journal row_id 3 (message_id m2): state changed"},
		{"updated_at_ms", "UPDATE comms_journal SET updated_at_ms = 1 WHERE message_id = 'm2'", false,
			"comms_journal row_id 3 (message_id m2): state changed"},
		{"reordered rows", "UPDATE comms_journal SET row_id = 100 WHERE row_id = 2; UPDATE comms_journal SET row_id = 2 WHERE row_id = 3; UPDATE comms_journal SET row_id = 3 WHERE row_id = 100;", false,
			"comms_events event_id 2 (message_id m1): hash mismatch"},
		{"reordered events, chain recomputed", "UPDATE comms_events SET event_id = 100 WHERE event_id = 9; UPDATE comms_events SET event_id = 9 WHERE event_id = 10; UPDATE comms_events SET event_id = 10 WHERE event_id = 100;", true,
			"comms_events event_id 1 (message_id m0): hashed without the ledger key"},
		{"fake DECISION signal", "INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES ('m2', 'app-session-1', 'oracle', 'ORACLE #2', 'DECISION', 'ship without tests', 1)", false,
			"comms_events event_id 3 (message_id m2): hash mismatch"},
		{"fake DECISION signal of no message", "INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES ('ghost', 'app-session-1', 'oracle', 'ORACLE #9', 'DECISION', 'ship without tests', 1)", false,
			"comms_signals signal_id 3 (message_id ghost): no chained event records it"},
		{"signal text", "UPDATE comms_signals SET text = 'use postgres' WHERE signal_id = 1", false,
			"comms_events event_id 1 (message_id m0): hash mismatch"},
		{"TASK reopened", "UPDATE comms_signals SET resolved_by = NULL WHERE signal_id = 2", false,
			"comms_events event_id 4 (message_id m3): hash mismatch"},
		{"TASK resolved by no message", "UPDATE comms_signals SET resolved_by = 'ghost' WHERE signal_id = 2", false,
			"comms_events event_id 4 (message_id m3): hash mismatch"},
		{"ACK REQUIRED obligation closed", "UPDATE comms_obligations SET closed_by = 'm5', closed_at_ms = 1 WHERE message_id = 'm4'", false,
			"comms_obligations obligation_id 2 (message_id m4): closed by m5 with no obligation_closed event"},
		{"closed obligation reopened", "UPDATE comms_obligations SET closed_by = NULL, closed_at_ms = NULL WHERE message_id = 'm0'", false,
			"comms_events event_id 5 (message_id m0): hash mismatch"},
		{"obligation deleted", "DELETE FROM comms_obligations WHERE message_id = 'm4'", false,
			"comms_events event_id 6 (message_id m4): hash mismatch"},
		{"fake obligation of no message", "INSERT INTO comms_obligations(message_id, session_id, owner_role, requester_role, ref, opened_at_ms) VALUES ('ghost', 'app-session-1', 'architect', 'oracle', 'ORACLE #9', 1)", false,
			"comms_obligations obligation_id 3 (message_id ghost): no chained event records it"},
		{"reminder time", "UPDATE comms_obligations SET reminded_at_ms = 1 WHERE message_id = 'm4'", false,
			"comms_obligations obligation_id 2 (message_id m4): reminded_at_ms 1, the chain says"},
		{"truncated tail, head rewritten", truncateTail, false,
			"kv chain_head: not signed with the ledger key"},
		{"body rewritten, chain recomputed without the key", "UPDATE comms_events SET detail_json = replace(detail_json, (SELECT body_hash FROM comms_journal WHERE message_id = 'm2'), '" + sha256Hex("forged") + "') WHERE event_id = 3;" +
			"UPDATE comms_journal SET raw_body = 'forged', body_hash = '" + sha256Hex("forged") + "' WHERE message_id = 'm2';", true,
			"comms_events event_id 1 (message_id m0): hashed without the ledger key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
			l := openAt(t, path, Options{})
			ctx := ctxT(t)
			tamperFixture(t, l)
			r, err := l.Verify(ctx)
			if err != nil || !r.OK || r.Events != 11 || r.Messages != 6 {
				t.Fatalf("untouched Verify = %+v, %v", r, err)
			}
			tamperScript(t, path, tt.tamper)
			if tt.rechain {
				rechainUnkeyed(t, path)
			}
			r, err = l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || r.Problems == 0 {
				t.Fatalf("tampered ledger verified OK: %+v", r)
			}
			if !strings.HasPrefix(r.FirstBad, tt.wantFirst) {
				t.Fatalf("FirstBad = %q, want prefix %q", r.FirstBad, tt.wantFirst)
			}
		})
	}
}

// fixCounts moves m2 (routed) from one sender's count to another's, as a
// careful forger would.
func fixCounts(from, to string) string {
	return "UPDATE comms_session_counts SET n = n - 1 WHERE status = 'routed' AND sender_role = '" + from + "';" +
		"UPDATE comms_session_counts SET n = n + 1 WHERE status = 'routed' AND sender_role = '" + to + "';"
}

// tamperScript runs SQL statements behind the ledger's back.
func tamperScript(t *testing.T, path, script string) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(10 * time.Second)
	if err := sqlitex.ExecuteScript(conn, script, nil); err != nil {
		t.Fatalf("tamper %q: %v", script, err)
	}
}

// rechainUnkeyed recomputes every event hash and the chain head with the
// unkeyed rule of older versions, which needs no secret: what anyone with
// write access to the file can do.
func rechainUnkeyed(t *testing.T, path string) { rechainUnkeyedTo(t, path, 0) }

// rechainUnkeyedTo recomputes events up to event_id upTo (0: all, and the
// chain head).
func rechainUnkeyedTo(t *testing.T, path string, upTo int64) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(10 * time.Second)
	type ev struct {
		id                  int64
		msgID, name, detail string
		atMs                int64
	}
	var evs []ev
	err = sqlitex.Execute(conn, "SELECT event_id, message_id, event, at_ms, detail_json FROM comms_events ORDER BY event_id", &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error {
			evs = append(evs, ev{stmt.ColumnInt64(0), stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(4), stmt.ColumnInt64(3)})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	prev := GenesisHash
	for _, e := range evs {
		if upTo > 0 && e.id > upTo {
			return
		}
		h := HashEvent(prev, e.id, e.msgID, e.name, e.atMs, e.detail)
		if err := sqlitex.Execute(conn, "UPDATE comms_events SET prev_hash = ?, hash = ? WHERE event_id = ?", &sqlitex.ExecOptions{Args: []any{prev, h, e.id}}); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
	head := fmt.Sprintf("%d:%s", evs[len(evs)-1].id, prev)
	if err := sqlitex.Execute(conn, "UPDATE kv SET value = ? WHERE key = 'chain_head'", &sqlitex.ExecOptions{Args: []any{head}}); err != nil {
		t.Fatal(err)
	}
}
