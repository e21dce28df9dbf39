package report

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"
	"hm/internal/ground/testutil"
	"hm/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedNow is the ledger clock of the fixture (used only by MarkReminded).
var fixedNow = time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)

// t0 is the send time of the fixture's first message.
var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC).UnixMilli()

// fixtureRoles is the team used with the fixture.
var fixtureRoles = []RoleInfo{
	{Role: "architect", Header: "ARCH", PaneID: "1"},
	{Role: "builder", Header: "BUILDER", PaneID: "2"},
	{Role: "oracle", Header: "ORACLE", PaneID: "3"},
	{Role: "builder-bg-1", Header: "BUILDER-BG-1", PaneID: "bg-2-1"},
}

func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelInfo) }

func ctxT(t testing.TB) context.Context { return testutil.Context(t) }

// openLedger opens a ledger at dir/evidence-ledger.db with a fixed clock and
// closes it at cleanup.
func openLedger(t testing.TB, dir string) *journal.Ledger {
	t.Helper()
	l, err := journal.Open(context.Background(), filepath.Join(dir, "evidence-ledger.db"), journal.Options{
		Logger: testLogger(t),
		Now:    func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close ledger: %v", err)
		}
	})
	return l
}

// fm describes one fixture message compactly.
type fm struct {
	id, session, from, to, channel, header string
	seq                                    int64
	body                                   string
	status, ack, errCode                   string
	noSentTime                             bool
	obligation                             string // owner role: opens an obligation
	refs                                   []string
	signals                                []journal.Signal
}

// longBody is a very long body with pipes, newlines and tabs.
var longBody = "(ARCH #5): [URGENT] Rebuild everything | step 1: go build ./...\n| step 2: go test -race ./...\t|step 3|\n" +
	strings.Repeat("This sentence is filler text to exceed the cell limit. ", 12) + "END-OF-LONG-BODY"

// fixture is the fixed ledger of the golden tests: an older session 6, the
// handed-off session 7 and a starting session 8.
var fixture = []fm{
	{id: "m6-01", session: "app-session-6", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 1,
		body: "(ARCH #1): [ACK REQUIRED] Old ask that nobody answered", status: "acked", ack: "delivered.verified", obligation: "builder",
		signals: []journal.Signal{{Kind: "TASK", Text: "old task from session 6"}}},
	{id: "m6-02", session: "app-session-6", from: "builder", to: "oracle", channel: "ws", header: "BUILDER", seq: 1,
		body: "(BUILDER #1): ping", status: "failed", errCode: "no_route"},

	{id: "m7-01", session: "app-session-7", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 1,
		body: "(ARCH #1): [ACK REQUIRED] Build the parser | use table-driven tests", status: "acked", ack: "delivered.verified", obligation: "builder"},
	{id: "m7-02", session: "app-session-7", from: "builder", to: "architect", channel: "ws", header: "BUILDER", seq: 1,
		body:   "(BUILDER #1): ACK ARCH #1, on it.\nTASK: write the fuzz tests\nFINDING: the header parser accepts `(ARCH#1):`",
		status: "routed", ack: "accepted.unverified", refs: []string{"ARCH #1"},
		signals: []journal.Signal{{Kind: "TASK", Text: "write the fuzz tests"}, {Kind: "FINDING", Text: "the header parser accepts `(ARCH#1):`"}}},
	{id: "m7-03", session: "app-session-7", from: "architect", to: "oracle", channel: "ws", header: "ARCH", seq: 2,
		body: "(ARCH #2): [ACK REQUIRED] Investigate the flaky CI run|job 42\n\n\tthen report back", status: "acked", ack: "delivered.verified", obligation: "oracle"},
	{id: "m7-04", session: "app-session-7", from: "oracle", to: "architect", channel: "trigger", header: "ORACLE", seq: 1,
		body: "(ORACLE #1): DECISION: keep SQLite in WAL mode\nBLOCKER: staging DB is down", status: "acked", ack: "delivered.verified",
		signals: []journal.Signal{{Kind: "DECISION", Text: "keep SQLite in WAL mode"}, {Kind: "BLOCKER", Text: "staging DB is down"}}},
	{id: "m7-05", session: "app-session-7", from: "architect", to: "oracle", channel: "ws", header: "ARCH", seq: 3,
		body: "(ARCH #3): Re ORACLE #1: the blocker is cleared, staging is back.", status: "routed", ack: "delivered.websocket", refs: []string{"ORACLE #1"}},
	{id: "m7-06", session: "app-session-7", from: "builder", to: "architect", channel: "ws", header: "BUILDER", seq: 2,
		body: "(BUILDER #2): TASK: update the docs", status: "acked", ack: "delivered.verified",
		signals: []journal.Signal{{Kind: "TASK", Text: "update the docs"}}},
	{id: "m7-07", session: "app-session-7", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 4,
		body: "(ARCH #4): Thanks, BUILDER #2 is done.", status: "acked", ack: "delivered.verified", refs: []string{"BUILDER #2"}},
	{id: "m7-08", session: "app-session-7", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 5,
		body: longBody, status: "failed", errCode: "expired_session"},
	{id: "telegram-in-501", session: "app-session-7", from: "user", to: "architect", channel: "telegram",
		body: "[Telegram from alice]: status?  any | news?", status: "acked", ack: "delivered.verified", noSentTime: true},
	{id: "m7-10", session: "app-session-7", from: "builder", to: "oracle", channel: "ws", header: "BUILDER", seq: 3,
		body: "(BUILDER #3): please review the PR\r\nthanks", status: "brokered"},
	{id: "m7-11", session: "app-session-7", from: "system", to: "oracle", channel: "system",
		body: "Reminder: ARCH #2 is waiting for your answer.", status: "routed", ack: "accepted.unverified"},
	{id: "m7-12", session: "app-session-7", from: "oracle", to: "all", channel: "ws", header: "ORACLE", seq: 2,
		body: "(ORACLE #2): DECISION: ship on Friday — ünïcödé 🚀", status: "brokered",
		signals: []journal.Signal{{Kind: "DECISION", Text: "ship on Friday — ünïcödé 🚀"}}},
	{id: "m7-13", session: "app-session-7", from: "builder-bg-1", to: "builder", channel: "ws", header: "BUILDER-BG-1", seq: 1,
		body: "(BUILDER-BG-1 #1): BLOCKER: cannot reach the module proxy", status: "acked", ack: "delivered.verified",
		signals: []journal.Signal{{Kind: "BLOCKER", Text: "cannot reach the module proxy"}}},
	{id: "m7-14", session: "app-session-7", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 6,
		body: "(ARCH #6): run the | migration", status: "routed", ack: "stuck"},

	{id: "m8-01", session: "app-session-8", from: "architect", to: "builder", channel: "ws", header: "ARCH", seq: 1,
		body: "(ARCH #1): hello from the new session", status: "brokered"},
}

// buildFixture writes the fixture into a fresh ledger under dir.
func buildFixture(t testing.TB, dir string) *journal.Ledger {
	t.Helper()
	l := openLedger(t, dir)
	ctx := ctxT(t)
	for i, f := range fixture {
		sent := t0 + int64(i)*60_000
		m := &journal.Message{
			MessageID:    f.id,
			SessionID:    f.session,
			SenderRole:   f.from,
			TargetRole:   f.to,
			Channel:      f.channel,
			Seq:          f.seq,
			Header:       f.header,
			SentAtMs:     sent,
			BrokeredAtMs: sent + 5,
			RawBody:      f.body,
			Status:       status.Status(f.status),
			AckStatus:    status.Stage(f.ack),
			ErrorCode:    status.Code(f.errCode),
			UpdatedAtMs:  sent + 100,
			Refs:         f.refs,
			Signals:      f.signals,
		}
		if f.noSentTime {
			m.SentAtMs = 0
		}
		if f.channel == "telegram" {
			m.Direction = journal.DirectionInbound
		}
		if f.status == "failed" {
			m.Attempt = 2
		}
		if f.obligation != "" {
			m.Obligation = &journal.Obligation{OwnerRole: f.obligation}
		}
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatalf("append %s: %v", f.id, err)
		}
	}
	// The stuck message's reason is its stuck event's.
	if _, err := l.Advance(ctx, journal.Change{MessageID: "m7-14", AckStatus: status.Stuck, Event: status.EventStuck,
		Detail: map[string]any{"pane": "builder", "error": "message stuck: the text never appeared on the screen in 3 typings"}}); err != nil {
		t.Fatalf("advance m7-14: %v", err)
	}
	// The open obligation of ARCH #2 got its reminder.
	if err := l.MarkReminded(ctx, "m7-03"); err != nil {
		t.Fatalf("mark reminded: %v", err)
	}
	return l
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got ---\n%s", name, got)
	}
}
