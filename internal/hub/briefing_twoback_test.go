package hub_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"hm/internal/hub"
	"hm/internal/layout"
	"hm/internal/status"
	"hm/journal"
)

// TestBriefingListsExpiredFromTwoSessionsBack: a message of session 1 that
// stayed pending through session 2 and expires at the start of session 3 is
// a failure of this start, so the briefing lists it under Failed Deliveries
// although its row comes before the previous session's first row. Before
// the fix the list began at session 2's first row and the failure was
// shown nowhere.
func TestBriefingListsExpiredFromTwoSessionsBack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := journal.Open(ctx, lay.Ledger(), journal.Options{KeyPath: lay.LedgerKey()})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	if _, err := l.Append(ctx, &journal.Message{MessageID: "stale-s1", SessionID: "app-session-1", SenderRole: "architect",
		TargetRole: "builder", Channel: "ws", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): work from two sessions back", BrokeredAtMs: old, UpdatedAtMs: old}); err != nil {
		t.Fatal(err)
	}
	prev := time.Now().Add(-time.Hour).UnixMilli()
	m2 := &journal.Message{MessageID: "done-s2", SessionID: "app-session-2", SenderRole: "architect",
		TargetRole: "builder", Channel: "ws", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): delivered last session", BrokeredAtMs: prev, UpdatedAtMs: prev}
	if _, err := l.Append(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Advance(ctx, journal.Change{MessageID: "done-s2", Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lay.WriteAppStatus(layout.AppStatus{Session: 2}); err != nil {
		t.Fatal(err)
	}

	th := startHubAt(t, root, hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
	if m := row(t, th, "stale-s1"); m.Status != status.Failed || m.ErrorCode != status.CodeExpiredSession {
		t.Fatalf("stale row = %s/%s, want failed/expired_session", m.Status, m.ErrorCode)
	}
	data, err := os.ReadFile(lay.Briefing())
	if err != nil {
		t.Fatal(err)
	}
	b := string(data)
	i := strings.Index(b, "## Failed Deliveries")
	if i < 0 {
		t.Fatalf("no Failed Deliveries section:\n%s", b)
	}
	failed, _, _ := strings.Cut(b[i:], "## Pending Deliveries")
	if !strings.Contains(failed, "expired_session") || !strings.Contains(failed, "two sessions back") {
		t.Errorf("Failed Deliveries does not list the message that expired at this start:\n%s", failed)
	}
}
