package hub_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/internal/hub"
	"hm/journal"
)

// TestBriefingListsExpired: a message an earlier session left pending and
// too old to deliver is failed with expired_session at this start, and the
// startup briefing lists it under Failed Deliveries (SPEC §10), not under
// Pending Deliveries and not nowhere. Before the fixes the briefing was
// built before the message was failed (it showed it as pending), and it
// listed failures only from the previous session's first row on (a
// message from two sessions back was shown nowhere).
func TestBriefingListsExpired(t *testing.T) {
	t.Parallel()
	ago := func(d time.Duration) int64 { return time.Now().Add(-d).UnixMilli() }
	msg := func(id string, session int, body string, at int64) *journal.Message {
		return &journal.Message{MessageID: id, SessionID: "app-session-" + strconv.Itoa(session), SenderRole: "architect",
			TargetRole: "builder", Channel: "ws", Header: "ARCH", Seq: 1, RawBody: "(ARCH #1): " + body, BrokeredAtMs: at, UpdatedAtMs: at}
	}
	tests := []struct {
		name    string
		session int                // the last session before this start
		stale   *journal.Message   // left pending, expires at this start
		done    []*journal.Message // delivered and acknowledged
	}{
		{"previous session", 1, msg("stale-1", 1, "stale work", ago(time.Hour)), nil},
		{"two sessions back", 2, msg("stale-s1", 1, "work from two sessions back", ago(2*time.Hour)),
			[]*journal.Message{msg("done-s2", 2, "delivered last session", ago(time.Hour))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			lay := layout.Layout{Root: t.TempDir()}
			if err := lay.Ensure(); err != nil {
				t.Fatal(err)
			}
			l, err := journal.Open(ctx, lay.Ledger(), journal.Options{KeyPath: lay.LedgerKey()})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range append([]*journal.Message{tc.stale}, tc.done...) {
				if _, err := l.Append(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range tc.done {
				if _, err := l.Advance(ctx, journal.Change{MessageID: m.MessageID, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := lay.WriteAppStatus(layout.AppStatus{Session: tc.session}); err != nil {
				t.Fatal(err)
			}

			th := startHubAt(t, lay.Root, hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
			if m := row(t, th, tc.stale.MessageID); m.Status != status.Failed || m.ErrorCode != status.CodeExpiredSession {
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
			failed, rest, _ := strings.Cut(b[i:], "## Pending Deliveries")
			pending, _, _ := strings.Cut(rest, "## ")
			body := strings.TrimPrefix(tc.stale.RawBody, "(ARCH #1): ")
			if !strings.Contains(failed, "expired_session") || !strings.Contains(failed, body) {
				t.Errorf("Failed Deliveries does not list the expired message:\n%s", failed)
			}
			if strings.Contains(pending, body) {
				t.Errorf("Pending Deliveries still lists the expired message:\n%s", pending)
			}
		})
	}
}
