package journal

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/internal/ground/poll"
)

// capAtCurrentSize caps l's database at its current size: a change that
// needs a new page cannot commit (SetMaxBytes(ctx, 0) lifts it).
func capAtCurrentSize(t *testing.T, l *Ledger) {
	t.Helper()
	st, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetMaxBytes(context.Background(), st.Size()); err != nil {
		t.Fatal(err)
	}
}

// TestAsyncAdvanceKeptWhileUnavailable: a fire-and-forget state change that
// cannot commit because the ledger is full is kept and committed after the
// next successful transaction, not dropped.
func TestAsyncAdvanceKeptWhileUnavailable(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := context.Background()
	if _, err := l.Append(ctx, &Message{MessageID: "m1", SessionID: "s", SenderRole: "architect", TargetRole: "builder", RawBody: "hi"}); err != nil {
		t.Fatal(err)
	}
	capAtCurrentSize(t, l)
	big := strings.Repeat("x", 64<<10)
	l.AdvanceAsync(Change{MessageID: "m1", Status: status.Routed, AckStatus: "delivered.websocket", Event: "delivered", Detail: map[string]any{"pad": big}})
	// The cap refuses a write that needs room: wait until the async change
	// has been tried and kept (the row is still brokered).
	_, err := l.Append(ctx, &Message{MessageID: "m2", SessionID: "s", SenderRole: "architect", TargetRole: "builder", RawBody: big})
	if err == nil {
		t.Fatal("append over the cap committed")
	}
	if m, _ := l.Get(ctx, "m1"); m.Status != status.Brokered {
		t.Fatalf("m1 = %s while the ledger is full", m.Status)
	}
	if err := l.SetMaxBytes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, &Message{MessageID: "m3", SessionID: "s", SenderRole: "architect", TargetRole: "builder", RawBody: "room again"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 5*time.Second, func() error {
		m, err := l.Get(ctx, "m1")
		return poll.Want(err == nil && m.Status == status.Routed && m.AckStatus == "delivered.websocket", "the kept change committed")
	})
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
