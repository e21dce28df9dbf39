package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"github.com/coder/websocket"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/journal"
	"hm/roles"
)

func TestRouteToListenerAckFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	builder := h.as("builder", true)
	arch := h.as("architect", false)

	ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "tests pass", MessageID: "m-1"})
	if !ack.OK || !ack.Accepted || ack.Verified || ack.Seq != 1 || ack.Header != "ARCH" ||
		ack.SessionID != "app-session-1" || ack.MessageID != "m-1" || ack.Dedupe || ack.Error != nil ||
		ack.Stage() != status.DeliveredWebSocket || ack.Type != "send-ack" || ack.Warnings == nil {
		t.Fatalf("ack = %+v", ack)
	}
	msg := decode[proto.Message](t, nextOf(t, builder, "message"))
	if msg.From != "architect" || msg.MessageID != "m-1" || msg.Seq != 1 || msg.Content != "(ARCH #1): tests pass" || msg.Priority != "normal" {
		t.Fatalf("message = %+v", msg)
	}
	// The listener's message-ack makes it delivered.verified.
	if err := builder.WriteJSON(ctxT(t), proto.Frame{Type: "message-ack", MessageID: "m-1"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 15*time.Second, func() error {
		m, err := h.ledger.Get(context.Background(), "m-1")
		return poll.Want(err == nil && m.Status == "acked" && m.AckStatus == status.DeliveredVerified, "acked row")
	})
	var dc proto.DeliveryResult
	if err := arch.Request(ctxT(t), proto.Frame{Type: "delivery-check", RequestID: "r2", MessageID: "m-1"}, "delivery-check-result", &dc); err != nil {
		t.Fatal(err)
	}
	if !dc.Known || dc.Status != "acked" || dc.AckStatus != status.DeliveredVerified || dc.RequestID != "r2" {
		t.Fatalf("delivery-check = %+v", dc)
	}
}

func TestSequenceRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.as("builder", true)
	arch := h.as("architect", false)
	steps := []struct {
		content string
		seq     int64
		warning string
		dedupe  bool
	}{
		{"no header", 1, "", false},
		{"(ARCH #2): expected", 2, "", false},
		{"(arch#3):lower case header", 3, "", false},
		{"(ARCH #2): reused number, new body", 2, broker.WarnSeqReused, false},
		{"(ARCH #2): expected", 2, "", true}, // same sender, N and body: duplicate
		{"(ARCH #10): jump", 10, broker.WarnSeqGap, false},
		{"after the jump", 11, "", false},
		{"[AGENT MSG - reply via hm-send] (ARCH #12): prefixed", 12, "", false},
	}
	for i, st := range steps {
		ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: st.content})
		if !ack.OK || ack.Seq != st.seq || ack.Dedupe != st.dedupe {
			t.Fatalf("step %d %q: ack = %+v", i, st.content, ack)
		}
		if got := strings.Join(ack.Warnings, ","); got != st.warning {
			t.Fatalf("step %d: warnings %q, want %q", i, got, st.warning)
		}
	}
	// The duplicate repeated the first one's message id.
	hist, err := h.ledger.History(context.Background(), journal.HistoryQuery{Last: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 7 {
		t.Fatalf("ledger has %d rows, want 7 (the duplicate is not stored)", len(hist))
	}
	if hist[0].RawBody != "(ARCH #1): no header" {
		t.Fatalf("hub did not prepend the header: %q", hist[0].RawBody)
	}
}

func TestDedupeByMessageID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.as("builder", true)
	arch := h.as("architect", false)
	first := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "once", MessageID: "dup-1"})
	again := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "once", MessageID: "dup-1"})
	if !again.Dedupe || again.Seq != first.Seq || again.MessageID != "dup-1" || !again.OK {
		t.Fatalf("repeat ack = %+v (first %+v)", again, first)
	}
	nextOf(t, b, "message")
	// A sentinel proves nothing else arrived in between.
	send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "sentinel", MessageID: "s-1"})
	m := decode[proto.Message](t, nextOf(t, b, "message"))
	if m.MessageID != "s-1" {
		t.Fatalf("duplicate delivered again: got %s", m.MessageID)
	}
}

func TestWaitingDeliveryToLateListener(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	ack := send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "read this later", MessageID: "late-1"})
	if !ack.OK || ack.Stage() != status.AcceptedUnverified {
		t.Fatalf("ack = %+v", ack)
	}
	oracle := h.as("oracle", true)
	m := decode[proto.Message](t, nextOf(t, oracle, "message"))
	if m.MessageID != "late-1" || m.Content != "(ARCH #1): read this later" {
		t.Fatalf("message = %+v", m)
	}
	poll.For(t, 15*time.Second, func() error {
		r, err := h.ledger.Get(context.Background(), "late-1")
		return poll.Want(err == nil && r.Status == "routed" && r.AckStatus == status.DeliveredWebSocket, "routed")
	})
}

func TestBroadcastExcludesSender(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", true)
	b := h.as("builder", true)
	o := h.as("oracle", true)
	ack := send(t, arch, proto.Frame{Type: "broadcast", Content: "standup", MessageID: "bc-1"})
	if !ack.OK || strings.Join(ack.Targets, ",") != "builder,oracle" {
		t.Fatalf("ack = %+v", ack)
	}
	for _, c := range []*client.Client{b, o} {
		if m := decode[proto.Message](t, nextOf(t, c, "message")); m.MessageID != "bc-1" {
			t.Fatalf("got %+v", m)
		}
	}
	// The sender's own listener gets nothing: a direct message arrives first.
	send(t, b, proto.Frame{Type: "send", Target: "architect", Content: "direct", MessageID: "d-1"})
	if m := decode[proto.Message](t, nextOf(t, arch, "message")); m.MessageID != "d-1" {
		t.Fatalf("sender received its own broadcast: %+v", m)
	}
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 })
	raw := h.dial()
	ctx := ctxT(t)
	expectErr := func(c *client.Client, frame any, code status.Code) {
		t.Helper()
		if err := c.WriteJSON(ctx, frame); err != nil {
			t.Fatal(err)
		}
		e := decode[proto.ErrorFrame](t, nextOf(t, c, "error"))
		if e.Code != code {
			t.Fatalf("frame %v: code %q, want %q (%s)", frame, e.Code, code, e.Message)
		}
	}
	expectErr(raw, proto.Frame{Type: "send", Target: "builder", Content: "x"}, status.CodeNotRegistered)
	expectErr(raw, proto.Frame{Type: "warp-drive"}, status.CodeUnknownType)
	expectErr(raw, json.RawMessage(`"just a string"`), status.CodeBadJSON)
	expectErr(raw, json.RawMessage(`[1,2,3]`), status.CodeBadJSON)
	if err := raw.WriteJSON(ctx, proto.Frame{Type: "send", Content: strings.Repeat("a", 300<<10)}); err != nil {
		t.Fatal(err)
	}
	if e := decode[proto.ErrorFrame](t, nextOf(t, raw, "error")); e.Code != status.CodeTooLarge {
		t.Fatalf("300 KiB frame: %+v", e)
	}
	// Still usable after every error: an unregistered heartbeat is refused,
	// and after register it is answered.
	var hb proto.HeartbeatAck
	if err := raw.Request(ctx, proto.Frame{Type: "heartbeat", RequestID: "r3"}, "heartbeat-ack", &hb); !errors.Is(err, proto.ErrNotRegistered) {
		t.Fatalf("unregistered heartbeat after errors: %+v %v", hb, err)
	}
	if _, err := raw.Register(ctx, "oracle", h.tokens.Issue("oracle"), false); err != nil {
		t.Fatal(err)
	}
	if err := raw.Request(ctx, proto.Frame{Type: "heartbeat", RequestID: "r4"}, "heartbeat-ack", &hb); err != nil || hb.Timestamp == 0 {
		t.Fatalf("heartbeat after errors: %+v %v", hb, err)
	}

	bg := h.as("builder-bg-1", false)
	arch := h.as("architect", false)
	refusals := []struct {
		c    *client.Client
		f    proto.Frame
		code status.Code
	}{
		{arch, proto.Frame{Type: "send", Target: "nobody", Content: "x"}, status.CodeInvalidTarget},
		{arch, proto.Frame{Type: "send", Target: "../etc", Content: "x"}, status.CodeInvalidTarget},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "   "}, status.CodeEmptyContent},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1):"}, status.CodeEmptyContent},          // a header and nothing after it
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1): \n\t  \n"}, status.CodeEmptyContent}, // or only blanks
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "x", Priority: "bogus"}, status.CodeBadRequest},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "x", Priority: "URGENT"}, status.CodeBadRequest},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "x", Metadata: json.RawMessage(`[1,2]`)}, status.CodeBadRequest},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "x", Metadata: json.RawMessage(`"text"`)}, status.CodeBadRequest},
		{arch, proto.Frame{Type: "send", Target: "builder", Content: "(BUILDER #1): forged"}, status.CodeRoleMismatch},
		{arch, proto.Frame{Type: "send", Target: "builder-bg-2", Content: "are you there"}, status.CodeNoRoute},
		{arch, proto.Frame{Type: "send", Target: "telegram", Content: "hi"}, status.CodeTelegramUnconfigured},
		{bg, proto.Frame{Type: "send", Target: "architect", Content: "hi boss"}, status.CodeOwnerBindingViolation},
		{bg, proto.Frame{Type: "broadcast", Content: "hi all"}, status.CodeOwnerBindingViolation},
		{bg, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #1): forged"}, status.CodeRoleMismatch},
	}
	for _, r := range refusals {
		ack := send(t, r.c, r.f)
		if ack.OK || ack.Status != string(r.code) || ack.Error == nil || *ack.Error != string(r.code) {
			t.Errorf("%+v: ack %+v, want %s", r.f, ack, r.code)
		}
		// The reason says why in words; the code is in status already
		// (hm-send prints "refused: <code>: <reason>").
		if ack.Reason == "" || strings.HasPrefix(ack.Reason, string(r.code)) {
			t.Errorf("%+v: reason %q, want words that do not repeat the code", r.f, ack.Reason)
		}
	}
	if ack := send(t, bg, proto.Frame{Type: "send", Target: "builder", Content: "done"}); !ack.OK || ack.Header != "BUILDER-BG-1" {
		t.Errorf("background to owner: %+v", ack)
	}
	// Operator may send as any role via the header.
	op := h.as("user", false)
	if ack := send(t, op, proto.Frame{Type: "send", Target: "builder", Content: "(ORACLE #1): as oracle"}); !ack.OK || ack.Header != "ORACLE" {
		t.Errorf("operator as oracle: %+v", ack)
	}
	// Every priority a sender may name, and metadata that is an object or
	// null, are taken.
	for i, p := range append([]string{""}, status.Priorities...) {
		f := proto.Frame{Type: "send", Target: "builder", Content: "prio " + p, Priority: p, Metadata: json.RawMessage([]string{`{"k":1}`, `null`, `{}`, ` {"a":[1]} `, `{"b":2}`}[i])}
		if ack := send(t, arch, f); !ack.OK {
			t.Errorf("priority %q, metadata %s: %+v", p, f.Metadata, ack)
		}
	}
	// Invalid UTF-8 is repaired, not refused.
	if ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "bad \xff bytes"}); !ack.OK {
		t.Errorf("invalid utf-8: %+v", ack)
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.RateLimit, c.RateBurst = 200, 400 })
	c := h.as("architect", false)
	ctx := ctxT(t)
	for i := 0; i < 2000; i++ {
		if err := c.WriteJSON(ctx, proto.Frame{Type: "heartbeat"}); err != nil {
			t.Fatal(err)
		}
	}
	limited, acks := 0, 0
	for limited+acks < 2000 {
		typ, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "error":
			if e := decode[proto.ErrorFrame](t, raw); e.Code == status.CodeRateLimited {
				limited++
			}
		case "heartbeat-ack":
			acks++
		}
	}
	if limited == 0 || acks < 400 {
		t.Fatalf("limited=%d acks=%d", limited, acks)
	}
}

func TestUnauthorizedRegisterClosesSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct{ name, role, token string }{
		{"no token", "builder", ""},
		{"wrong token", "builder", "nope"},
		{"pane token for another role", "architect", h.tokens.Issue("builder")},
		{"stale token", "oracle", "stale-" + operatorToken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dial()
			_, err := c.Register(ctxT(t), tc.role, tc.token, false)
			if !errors.Is(err, proto.ErrUnauthorized) {
				t.Fatalf("register err = %v", err)
			}
			_, _, err = c.Next(ctxT(t))
			if client.CloseStatus(err) == -1 {
				t.Fatalf("socket still open after unauthorized: %v", err)
			}
		})
	}
	// A revoked background token stops working.
	tok := h.tokens.Issue("builder-bg-3")
	h.tokens.Revoke("builder-bg-3")
	c := h.dial()
	if _, err := c.Register(ctxT(t), "builder-bg-3", tok, false); !errors.Is(err, proto.ErrUnauthorized) {
		t.Fatalf("revoked token: %v", err)
	}
}

func TestAllowAnonymous(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.AllowAnonymous = true })
	c := h.dial()
	r, err := c.Register(ctxT(t), "oracle", "", false)
	if err != nil || r.Role != "oracle" || r.PaneID != "3" {
		t.Fatalf("anonymous register: %+v %v", r, err)
	}
	if ack := send(t, c, proto.Frame{Type: "send", Target: "arch", Content: "hello"}); !ack.OK || ack.Header != "ORACLE" {
		t.Fatalf("ack %+v", ack)
	}
}

func TestHealthCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withPanes("architect"))
	c := h.as("builder", true)
	ask := func(target string, stale int64) proto.HealthResult {
		var r proto.HealthResult
		if err := c.Request(ctxT(t), proto.Frame{Type: "health-check", Target: target, RequestID: "h-" + target, StaleAfterMs: stale}, "health-check-result", &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := ask("builder", 60000); !r.Healthy || r.Status != "healthy" || r.PaneID != "2" || r.StaleThresholdMs != 60000 {
		t.Errorf("builder: %+v", r)
	}
	if r := ask("lead", 60000); !r.Healthy || r.Role != "architect" {
		t.Errorf("hosted architect: %+v", r)
	}
	if r := ask("oracle", 60000); r.Healthy || r.Status != "offline" {
		t.Errorf("oracle: %+v", r)
	}
	if r := ask("nobody", 0); r.Healthy || r.Status != "invalid_target" {
		t.Errorf("nobody: %+v", r)
	}
	poll.For(t, 15*time.Second, func() error {
		var r proto.HealthResult
		o := h.as("oracle", false)
		if err := o.Request(ctxT(t), proto.Frame{Type: "health-check", Target: "builder", RequestID: "x", StaleAfterMs: 1}, "health-check-result", &r); err != nil {
			t.Fatal(err)
		}
		return poll.Want(r.Status == "stale" && !r.Healthy, "builder goes stale")
	})
}

func TestPaneDeliveryAndWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withPanes("builder"))
	arch := h.as("architect", false)
	ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "[URGENT] build it", MessageID: "p-1", WaitMs: 50})
	if !ack.OK || ack.Stage() != status.AcceptedUnverified {
		t.Fatalf("ack = %+v", ack)
	}
	if h.panes.count("builder") != 1 || !h.panes.got["builder"][0].Urgent {
		t.Fatalf("pane deliveries = %+v", h.panes.got)
	}
	poll.For(t, 15*time.Second, func() error {
		m, err := h.ledger.Get(context.Background(), "p-1")
		return poll.Want(err == nil && m.Status == "routed", "routed")
	})
	// A receipt while a sender waits turns the ACK into delivered.verified.
	done := make(chan proto.Ack, 1)
	go func() {
		a, _, _ := arch.Send(ctxT(t), proto.Frame{Type: "send", Target: "builder", Content: "second", MessageID: "p-2", WaitMs: 10000})
		done <- a
	}()
	poll.For(t, 15*time.Second, func() error {
		_, err := h.ledger.Get(context.Background(), "p-2")
		return poll.Want(err == nil, "p-2 committed")
	})
	if err := h.b.Acknowledge(context.Background(), "p-2", "receipt"); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.Stage() != status.DeliveredVerified || !a.Verified {
			t.Fatalf("waited ack = %+v", a)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("waiting send never answered")
	}
}

func TestDeliveryCheckAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarnessAt(t, dir+"/l.db", 1)
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "survive", MessageID: "keep-1"})
	h.close()

	h2 := newHarnessAt(t, dir+"/l.db", 2)
	c := h2.as("architect", false)
	var dc proto.DeliveryResult
	if err := c.Request(ctxT(t), proto.Frame{Type: "delivery-check", RequestID: "q", MessageID: "keep-1"}, "delivery-check-result", &dc); err != nil {
		t.Fatal(err)
	}
	if !dc.Known || dc.Status != "brokered" {
		t.Fatalf("after restart: %+v", dc)
	}
	var unknown proto.DeliveryResult
	if err := c.Request(ctxT(t), proto.Frame{Type: "delivery-check", RequestID: "q2", MessageID: "never"}, "delivery-check-result", &unknown); err != nil || unknown.Known {
		t.Fatalf("unknown id: %+v %v", unknown, err)
	}
	// The pending message from session 1 is delivered with the delayed prefix.
	o := h2.as("oracle", true)
	m := decode[proto.Message](t, nextOf(t, o, "message"))
	if m.MessageID != "keep-1" || !strings.HasPrefix(m.Content, "[delayed from session 1] ") {
		t.Fatalf("delayed message = %+v", m)
	}
}

func TestJournalUnavailable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	h.ledger.Close() // the ledger can no longer commit
	ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "x", MessageID: "ju-1"})
	if ack.OK || ack.Status != string(status.CodeJournalUnavailable) {
		t.Fatalf("ack = %+v", ack)
	}
}

func TestSubscribeJournal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sub := h.as("user", false)
	if err := sub.WriteJSON(ctxT(t), proto.Frame{Type: "subscribe", Topics: []string{"journal"}}); err != nil {
		t.Fatal(err)
	}
	// Frames are handled in order: once the heartbeat is answered the
	// subscription is active.
	var hb proto.HeartbeatAck
	if err := sub.Request(ctxT(t), proto.Frame{Type: "heartbeat", RequestID: "sync"}, "heartbeat-ack", &hb); err != nil {
		t.Fatal(err)
	}
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "[ACK REQUIRED] watched"})
	raw := nextOf(t, sub, "journal-event")
	var ev proto.JournalEvent
	if err := json.Unmarshal(raw, &ev); err != nil || !strings.Contains(ev.Row.RawBody, "watched") {
		t.Fatalf("journal-event = %s (%v)", raw, err)
	}
	// The row carries the tags a view shows (roles.ShownTags), so no
	// client parses the header itself.
	if strings.Join(ev.Row.Tags, ",") != roles.TagAckRequired {
		t.Fatalf("journal-event tags %q: %s", ev.Row.Tags, raw)
	}
}

func TestBrowserOriginRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := ctxT(t)
	for _, origin := range []string{"https://evil.example", "null", "http://localhost:1"} {
		_, resp, err := websocket.Dial(ctx, h.url, &websocket.DialOptions{HTTPHeader: map[string][]string{"Origin": {origin}}})
		if err == nil {
			t.Fatalf("origin %s accepted", origin)
		}
		if resp == nil || resp.StatusCode != 403 {
			t.Fatalf("origin %s: resp %v", origin, resp)
		}
	}
	_, resp, err := websocket.Dial(ctx, h.url, &websocket.DialOptions{Host: "attacker.example"})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("non-loopback Host accepted: %v", err)
	}
}

func TestSlowConsumerDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.SendQueue = 8; c.RateLimit = 0 })
	slow := h.dial()
	if _, err := slow.Register(ctxT(t), "oracle", h.tokens.Issue("oracle"), true); err != nil {
		t.Fatal(err)
	}
	arch := h.as("architect", false)
	body := strings.Repeat("x", 64<<10)
	for i := 0; i < 400 && h.b.ConnCount() == 2; i++ {
		send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: body})
	}
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(h.b.ConnCount() == 1, "slow consumer dropped, have %v", h.b.ConnCount())
	})
	// What it was owed is still pending and reaches it when it returns.
	pending, err := h.ledger.Pending(context.Background(), "oracle")
	if err != nil || len(pending) == 0 {
		t.Fatalf("pending = %d, %v", len(pending), err)
	}
	back := h.as("oracle", true)
	m := decode[proto.Message](t, nextOf(t, back, "message"))
	if m.MessageID == "" {
		t.Fatal("no redelivery")
	}
}

func TestOnlyRootPathServed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, path := range []string{"attach/architect", "status", "x/../"} {
		_, resp, err := websocket.Dial(ctxT(t), h.url+path, nil)
		if err == nil || resp == nil || resp.StatusCode != 404 {
			t.Errorf("/%s: err %v, resp %v; want 404", path, err, resp)
		}
	}
}

// TestWaitMsDoesNotHoldLaterSends: a send that waits for a definitive
// stage (waitMs) is answered when its wait ends; the sends after it on the
// same connection are routed and answered meanwhile. The acker waited in
// line, so every later send was delivered and ACKed only after the wait.
func TestWaitMsDoesNotHoldLaterSends(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	builder := h.as("builder", true)
	arch := h.as("architect", false)
	// Nobody listens for oracle: w1 waits its full 5 s for a definitive
	// stage; p2 and p3 go to builder's listener.
	frames := []proto.Frame{
		{Type: proto.TypeSend, Target: "oracle", Content: "wait for it", MessageID: "w1", WaitMs: 5000},
		{Type: proto.TypeSend, Target: "builder", Content: "go on", MessageID: "p2"},
		{Type: proto.TypeSend, Target: "builder", Content: "and on", MessageID: "p3"},
	}
	for _, f := range frames {
		if err := arch.WriteJSON(ctxT(t), f); err != nil {
			t.Fatal(err)
		}
	}
	// p2 and p3 reach the listener before w1's wait ends.
	for _, want := range []string{"p2", "p3"} {
		if m := decode[proto.Message](t, nextOf(t, builder, proto.TypeMessage)); m.MessageID != want {
			t.Fatalf("listener got %s, want %s", m.MessageID, want)
		}
	}
	var order []string
	for range frames {
		ack := decode[proto.Ack](t, nextOf(t, arch, proto.TypeSendAck))
		if !ack.OK {
			t.Fatalf("ack %+v", ack)
		}
		order = append(order, ack.MessageID)
	}
	if want := []string{"p2", "p3", "w1"}; !slices.Equal(order, want) {
		t.Fatalf("ACKs in order %v, want %v (w1 answered when its wait ends)", order, want)
	}
}
