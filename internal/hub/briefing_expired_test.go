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

// TestBriefingListsExpiredSession: a message an earlier session left
// pending and too old to deliver is failed with expired_session before the
// startup briefing is built, so the briefing lists it under Failed
// Deliveries (SPEC §10), not under Pending Deliveries. Before the fix the
// briefing was built first and showed it as still pending.
func TestBriefingListsExpiredSession(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).UnixMilli()
	l, err := journal.Open(context.Background(), lay.Ledger(), journal.Options{KeyPath: lay.LedgerKey()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), &journal.Message{MessageID: "stale-1", SessionID: "app-session-1", SenderRole: "architect",
		TargetRole: "builder", Channel: "ws", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): stale work", BrokeredAtMs: old, UpdatedAtMs: old}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lay.WriteAppStatus(layout.AppStatus{Session: 1}); err != nil {
		t.Fatal(err)
	}

	th := startHubAt(t, root, hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
	if m := row(t, th, "stale-1"); m.Status != status.Failed || m.ErrorCode != status.CodeExpiredSession {
		t.Fatalf("stale row = %s/%s, want failed/expired_session", m.Status, m.ErrorCode)
	}
	data, err := os.ReadFile(lay.Briefing())
	if err != nil {
		t.Fatal(err)
	}
	b := string(data)
	failed, rest, _ := strings.Cut(b[strings.Index(b, "## Failed Deliveries"):], "## Pending Deliveries")
	pending, _, _ := strings.Cut(rest, "## ")
	if !strings.Contains(failed, "expired_session") || !strings.Contains(failed, "stale work") {
		t.Errorf("Failed Deliveries does not list the expired message:\n%s", failed)
	}
	if strings.Contains(pending, "stale work") {
		t.Errorf("Pending Deliveries still lists the expired message:\n%s", pending)
	}
}
