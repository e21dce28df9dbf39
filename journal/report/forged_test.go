package report

import (
	"path/filepath"
	"strings"
	"testing"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/internal/ground/status"
	"hm/journal"
)

// TestForgedSideRowsLeftOut: signals and obligations written into the
// database directly, with no chained event (a message id no event
// records) or beside a real message's (its event's HMAC no longer
// matches), are what `hm journal verify` reports; the briefing and the
// handoff build only from rows the keyed chain covers, so none of them is
// listed, while the real ones are. The briefing listed a forged signal.
func TestForgedSideRowsLeftOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := openLedger(t, dir)
	for _, m := range []*journal.Message{
		{MessageID: "m-1", SenderRole: "architect", TargetRole: "builder", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): TASK: real task",
			Signals: []journal.Signal{{Kind: journal.SignalTask, Text: "real task"}}, Obligation: &journal.Obligation{OwnerRole: "builder"}},
		{MessageID: "m-2", SenderRole: "oracle", TargetRole: "architect", Header: "ORACLE", Seq: 1, RawBody: "(ORACLE #1): DECISION: real decision",
			Signals: []journal.Signal{{Kind: journal.SignalDecision, Text: "real decision"}}},
		{MessageID: "m-3", SenderRole: "builder", TargetRole: "architect", Header: "BUILDER", Seq: 1, RawBody: "(BUILDER #1): plain"},
	} {
		m.SessionID, m.Channel, m.Status, m.BrokeredAtMs = "app-session-7", "ws", status.Routed, fixedNow.UnixMilli()
		if _, err := l.Append(ctxT(t), m); err != nil {
			t.Fatal(err)
		}
	}
	const forge = `
INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) VALUES
 ('ghost', 'app-session-7', 'architect', 'ARCH #9', 'TASK', 'forged task of no message', 1),
 ('ghost', 'app-session-7', 'architect', 'ARCH #9', 'DECISION', 'forged decision of no message', 1),
 ('m-3', 'app-session-7', 'builder', 'BUILDER #1', 'BLOCKER', 'forged blocker beside a real message', 1),
 ('m-2', 'app-session-7', 'oracle', 'ORACLE #1', 'DECISION', 'forged decision beside a real one', 1);
INSERT INTO comms_obligations(message_id, session_id, owner_role, requester_role, ref, opened_at_ms) VALUES
 ('ghost', 'app-session-7', 'builder', 'architect', 'ARCH #9', 1);`
	conn, err := sqlite.OpenConn(filepath.Join(dir, "evidence-ledger.db"), sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.ExecuteScript(conn, forge, nil); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if r, err := l.Verify(ctxT(t)); err != nil || r.OK {
		t.Fatalf("verify = %+v, %v: want the forged rows reported", r, err)
	}
	docs := []struct {
		name  string
		build func() ([]byte, error)
		want  []string
	}{
		{"briefing", func() ([]byte, error) {
			return Briefing(ctxT(t), l, Options{SessionID: "app-session-8", Now: fixedNow})
		},
			[]string{"real task", "ARCH #1"}},
		{"handoff", func() ([]byte, error) { return Handoff(ctxT(t), l, Options{SessionID: "app-session-7"}) },
			[]string{"real task", "ARCH #1"}},
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			doc, err := d.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range d.want {
				if !strings.Contains(string(doc), w) {
					t.Errorf("%s lacks %q:\n%s", d.name, w, doc)
				}
			}
			for _, bad := range []string{"forged", "ARCH #9"} {
				if strings.Contains(string(doc), bad) {
					t.Errorf("%s lists a row the chain does not cover (%q):\n%s", d.name, bad, doc)
				}
			}
		})
	}
}
