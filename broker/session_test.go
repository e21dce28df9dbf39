package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
)

func TestRecoverDelaysRecentMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarnessAt(t, dir+"/l.db", 1)
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "fresh", MessageID: "fresh-1"})
	send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "also fresh", MessageID: "fresh-2"})
	h.close()

	h2 := newHarnessAt(t, dir+"/l.db", 2, withPanes("builder", "oracle"))
	delivered, expired, err := h2.b.Recover(context.Background())
	if err != nil || delivered != 2 || expired != 0 {
		t.Fatalf("Recover = %d, %d, %v", delivered, expired, err)
	}
	for role, want := range map[string]string{"oracle": "[delayed from session 1] (ARCH #1): fresh", "builder": "[delayed from session 1] (ARCH #2): also fresh"} {
		got := h2.panes.got[role]
		if len(got) != 1 || got[0].Content != want {
			t.Fatalf("%s pane got %+v, want %q", role, got, want)
		}
	}
	// Submitted means routed; a second Recover finds nothing left.
	if d, e, _ := h2.b.Recover(context.Background()); d+e != 0 {
		t.Fatalf("second Recover re-routed %d", d+e)
	}
}

func TestRecoverExpiresOldMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarnessAt(t, dir+"/l.db", 1)
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "stale", MessageID: "stale-1"})
	h.close()
	later := time.Now().Add(11 * time.Minute)
	h2 := newHarnessAt(t, dir+"/l.db", 2, withPanes("builder"), func(c *broker.Config, _ *broker.Deps) {
		c.Now = func() time.Time { return later }
	})
	delivered, expired, err := h2.b.Recover(context.Background())
	if err != nil || delivered != 0 || expired != 1 {
		t.Fatalf("Recover = %d, %d, %v", delivered, expired, err)
	}
	m, err := h2.ledger.Get(context.Background(), "stale-1")
	if err != nil || m.Status != "failed" || m.ErrorCode != "expired_session" {
		t.Fatalf("row = %+v, %v", m, err)
	}
	if h2.panes.count("builder") != 0 {
		t.Fatal("expired message was delivered")
	}
}

func TestObligationReminderAndClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.ReminderAfter = time.Millisecond })
	builder := h.as("builder", true)
	arch := h.as("architect", false)
	ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "[ACK REQUIRED] review the parser", MessageID: "ob-1"})
	if !ack.OK {
		t.Fatal(ack)
	}
	nextOf(t, builder, "message")
	poll.For(t, 15*time.Second, func() error {
		obs, _ := h.ledger.OpenObligations(context.Background(), 1)
		return poll.Want(len(obs) == 1, "obligation due, have %v", len(obs))
	})
	for i := 0; i < 3; i++ {
		h.b.RemindOnce(context.Background())
	}
	m := decode[proto.Message](t, nextOf(t, builder, "message"))
	if m.From != "system" || !strings.Contains(m.Content, "ARCH #1") || !strings.Contains(m.Content, "Reminder") {
		t.Fatalf("reminder = %+v", m)
	}
	// Exactly one reminder: a sentinel arrives next, not a second reminder.
	send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "sentinel", MessageID: "sent-1"})
	if m := decode[proto.Message](t, nextOf(t, builder, "message")); m.MessageID != "sent-1" {
		t.Fatalf("second reminder: %+v", m)
	}
	obs, err := h.ledger.OpenObligations(context.Background(), 0)
	if err != nil || len(obs) != 1 || obs[0].OwnerRole != "builder" || obs[0].Ref != "ARCH #1" {
		t.Fatalf("open obligations = %+v, %v", obs, err)
	}
	// The owner's reply referencing ARCH #1 closes it.
	if ack := send(t, builder, proto.Frame{Type: "send", Target: "architect", Content: "ACK ARCH #1: reviewed"}); !ack.OK {
		t.Fatal(ack)
	}
	obs, err = h.ledger.OpenObligations(context.Background(), 0)
	if err != nil || len(obs) != 0 {
		t.Fatalf("still open after the reply: %+v, %v", obs, err)
	}
}

// TestReminderLeavesTaskOpen: the hub's reminder names the obligation's ref
// ("Reply with a message that references ARCH #1"); that must not resolve a
// TASK or BLOCKER the [ACK REQUIRED] message carried. Before the fix the
// reminder resolved it and the task vanished from the briefing and handoff.
func TestReminderLeavesTaskOpen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.ReminderAfter = time.Millisecond })
	builder := h.as("builder", true)
	arch := h.as("architect", false)
	if ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "[ACK REQUIRED] TASK: review the parser", MessageID: "ob-task"}); !ack.OK {
		t.Fatal(ack)
	}
	nextOf(t, builder, "message")
	poll.For(t, 15*time.Second, func() error {
		obs, _ := h.ledger.OpenObligations(context.Background(), 1)
		return poll.Want(len(obs) == 1, "obligation due, have %v", len(obs))
	})
	h.b.RemindOnce(context.Background())
	if m := decode[proto.Message](t, nextOf(t, builder, "message")); !strings.Contains(m.Content, "Reminder") {
		t.Fatalf("reminder = %+v", m)
	}
	sigs, err := h.ledger.Signals(context.Background(), "app-session-1")
	if err != nil || len(sigs) != 1 || sigs[0].Kind != "TASK" {
		t.Fatalf("signals = %+v, %v", sigs, err)
	}
	if sigs[0].ResolvedBy != "" {
		t.Fatalf("the reminder resolved the TASK (resolved_by %s)", sigs[0].ResolvedBy)
	}
}

// TestReminderOnlyForThisSession: an obligation opened in an earlier
// session is not reminded in this one. Its ref ("ARCH #1") names another
// message here (numbers start again each session) and a reply here could
// never close it; it stays open for the briefing instead. Before the fix
// the new session's builder was told to reference ARCH #1.
func TestReminderOnlyForThisSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarnessAt(t, dir+"/l.db", 1)
	if ack := send(t, h.as("architect", false), proto.Frame{Type: "send", Target: "builder", Content: "[ACK REQUIRED] review the parser", MessageID: "old-ob"}); !ack.OK {
		t.Fatal(ack)
	}
	h.close()
	h2 := newHarnessAt(t, dir+"/l.db", 2, func(c *broker.Config, _ *broker.Deps) { c.ReminderAfter = time.Millisecond })
	builder := h2.as("builder", true)
	poll.For(t, 15*time.Second, func() error {
		obs, _ := h2.ledger.OpenObligations(context.Background(), 1)
		return poll.Want(len(obs) == 1, "obligation due, have %v", len(obs))
	})
	// The listener first gets the old message itself (redelivered on recovery or replay).
	h2.b.RemindOnce(context.Background())
	send(t, h2.as("architect", false), proto.Frame{Type: "send", Target: "builder", Content: "sentinel", MessageID: "sentinel-2"})
	for {
		m := decode[proto.Message](t, nextOf(t, builder, "message"))
		if strings.Contains(m.Content, "Reminder") {
			t.Fatalf("old session's obligation reminded: %+v", m)
		}
		if m.MessageID == "sentinel-2" {
			break
		}
	}
	obs, err := h2.ledger.OpenObligations(context.Background(), 0)
	if err != nil || len(obs) != 1 || obs[0].MessageID != "old-ob" || obs[0].RemindedAtMs != 0 {
		t.Fatalf("open obligations = %+v, %v", obs, err)
	}
}

// TestRecoverExpiresLifecycleNotices: the hub's lifecycle notices
// (Submission.SessionScoped: a slot's end, a session line, a reminder) that
// a session left pending expire with it, however young, instead of being
// typed into the next session as "[delayed from session 1] (SYSTEM #1):
// builder-bg-2 ended: hub_stopped"; other messages, the hub's own
// included, are still delivered late.
func TestRecoverExpiresLifecycleNotices(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		sub         broker.Submission
		wantExpired bool
	}{
		{"slot end notice", broker.Submission{From: "system", Target: "builder", Content: "builder-bg-2 ended: hub_stopped", Channel: broker.ChannelSystem, SessionScoped: true}, true},
		{"session line", broker.Submission{From: "system", Target: "builder", Content: "# SQUIDRUN SESSION", Raw: true, Channel: broker.ChannelSystem, SessionScoped: true}, true},
		{"system notice of a message", broker.Submission{From: "system", Target: "builder", Content: "Your message hm-1 to oracle is stuck", Channel: broker.ChannelSystem}, false},
		{"agent message", broker.Submission{From: "architect", Target: "builder", Content: "please rebase"}, false},
		{"scope claimed by an agent", broker.Submission{From: "architect", Target: "builder", Content: "mine", SessionScoped: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			h := newHarnessAt(t, dir+"/l.db", 1)
			ack, err := h.b.Submit(ctx, tc.sub)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			h.close()

			h2 := newHarnessAt(t, dir+"/l.db", 2, withPanes("builder"))
			delivered, expired, err := h2.b.Recover(ctx)
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			m, err := h2.ledger.Get(ctx, ack.MessageID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantExpired {
				if delivered != 0 || expired != 1 || m.Status != "failed" || m.ErrorCode != "expired_session" || h2.panes.count("builder") != 0 {
					t.Fatalf("Recover = %d delivered, %d expired; row %s/%s; pane got %d: want the notice expired, not typed", delivered, expired, m.Status, m.ErrorCode, h2.panes.count("builder"))
				}
				return
			}
			got := h2.panes.got["builder"]
			if delivered != 1 || expired != 0 || len(got) != 1 || !strings.HasPrefix(got[0].Content, "[delayed from session 1] ") {
				t.Fatalf("Recover = %d delivered, %d expired; pane got %+v: want it delivered late", delivered, expired, got)
			}
		})
	}
}

// TestRemindersArmedByObligations: the reminder loop runs no timer while no
// obligation is open (one look at start, then none however short its
// period), and an [ACK REQUIRED] message arms it: the reminder comes once
// ReminderAfter passed, and the loop is idle again after it.
func TestRemindersArmedByObligations(t *testing.T) {
	t.Parallel()
	const after = 300 * time.Millisecond
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.ReminderAfter = after })
	builder := h.as("builder", true)
	arch := h.as("architect", false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.b.RunReminders(ctx, 5*time.Millisecond) }()
	defer func() { cancel(); <-done }()

	idle := func(phase string) {
		t.Helper()
		poll.For(t, 15*time.Second, func() error {
			n := h.b.RemindRounds()
			return poll.Want(n >= 1, "%s: the loop's first look, have %d", phase, n)
		})
		before := h.b.RemindRounds()
		time.Sleep(200 * time.Millisecond) // 40 periods
		if n := h.b.RemindRounds(); n != before {
			t.Fatalf("%s: %d looks at the obligations while none waits for a reminder", phase, n-before)
		}
	}
	idle("no obligation")
	if ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "[ACK REQUIRED] review the parser", MessageID: "ob-armed"}); !ack.OK {
		t.Fatal(ack)
	}
	nextOf(t, builder, "message")
	m := decode[proto.Message](t, nextOf(t, builder, "message"))
	if m.From != "system" || !strings.Contains(m.Content, "Reminder") || !strings.Contains(m.Content, "ARCH #1") {
		t.Fatalf("reminder = %+v", m)
	}
	idle("reminded")
}
