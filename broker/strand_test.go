package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
)

// TestAbruptSenderCloseStrandsNothing: senders pipelining sends drop their
// sockets mid-burst. Every row the ledger committed must still be routed in
// this session, and no (sender, seq) pair may be issued twice.
func TestAbruptSenderCloseStrandsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withPanes("builder"), func(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 })
	const senders, per = 10, 100
	roleOf := []string{"architect", "oracle", "user"}
	clients := make([]*client.Client, senders)
	for i := range clients {
		clients[i] = h.as(roleOf[i%len(roleOf)], false)
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cut := per/3 + (i*37)%(per/2) // each sender stops somewhere mid-burst, dozens of sends in flight
			for n := 0; n < per; n++ {
				if n == cut {
					c.CloseNow()
					return
				}
				if err := c.WriteJSON(context.Background(), proto.Frame{Type: "send", Target: "builder", Content: fmt.Sprintf("burst %d/%d", i, n), MessageID: fmt.Sprintf("burst-%02d-%03d", i, n)}); err != nil {
					return
				}
			}
			c.CloseNow()
		}()
	}
	wg.Wait()

	ctx := context.Background()
	var rows []journal.Message
	// Every committed row is routed in the end: on a loaded machine that
	// takes a while (each routing is two ledger commits), so the wait is
	// for the condition, with a deadline load does not reach.
	poll.For(t, 3*time.Minute, func() error {
		var err error
		rows, err = h.ledger.History(ctx, journal.HistoryQuery{SessionID: "app-session-1"})
		if err != nil {
			return err
		}
		stranded := 0
		for _, r := range rows {
			if r.Status == status.Brokered {
				stranded++
			}
		}
		return poll.Want(stranded == 0 && h.b.ConnCount() == 0, "%d of %d committed rows still %s (never routed) after the senders left; %d connections open",
			stranded, len(rows), status.Brokered, h.b.ConnCount())
	})
	if len(rows) == 0 {
		t.Fatal("nothing committed")
	}
	type key struct {
		sender string
		seq    int64
	}
	seen := map[key]string{}
	for _, r := range rows {
		k := key{r.SenderRole, r.Seq}
		if prev, dup := seen[k]; dup {
			t.Errorf("(%s, %d) issued twice: %s and %s", r.SenderRole, r.Seq, prev, r.MessageID)
		}
		seen[k] = r.MessageID
	}
	t.Logf("%d rows committed and routed", len(rows))
}

// TestDedupeIsPerSender: a messageId is the sender's own. Another sender
// reusing it is refused with duplicate_id (its message must not vanish
// behind a dedupe:true); the same sender repeating it gets the repeated ACK.
func TestDedupeIsPerSender(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.as("oracle", true)
	arch := h.as("architect", false)
	builder := h.as("builder", false)
	first := send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "mine", MessageID: "shared-1"})
	if !first.OK {
		t.Fatalf("first ack = %+v", first)
	}
	other := send(t, builder, proto.Frame{Type: "send", Target: "oracle", Content: "also mine?", MessageID: "shared-1"})
	if other.OK || other.Dedupe || other.Error == nil || *other.Error != string(status.CodeDuplicateID) || other.Reason == "" {
		t.Fatalf("another sender reusing an id: ack = %+v; want ok:false duplicate_id with a reason", other)
	}
	again := send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "mine", MessageID: "shared-1"})
	if !again.OK || !again.Dedupe || again.Seq != first.Seq {
		t.Fatalf("same sender repeating its id: ack = %+v (first %+v)", again, first)
	}
	// The builder's numbering did not move for the refused message.
	next := send(t, builder, proto.Frame{Type: "send", Target: "oracle", Content: "fresh"})
	if !next.OK || next.Seq != 1 {
		t.Fatalf("builder's next ack = %+v; want seq 1", next)
	}
	row, err := h.ledger.Get(context.Background(), "shared-1")
	if err != nil || row.SenderRole != "architect" {
		t.Fatalf("row = %+v, %v", row, err)
	}
}

// TestUnackedReofferedAfterListenerDies: a listener stops reading and is
// dropped as a slow consumer while 1,500 messages are owed to it. A new
// listener for the role gets every message the first did not acknowledge,
// at least once and with the same messageId; acknowledged ones are not
// offered again.
func TestUnackedReofferedAfterListenerDies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.SendQueue = 64; c.RateLimit = 0 })
	ctx := ctxT(t)
	first := h.as("oracle", true)
	arch := h.as("architect", false)

	const acked, owed = 50, 1000
	body := strings.Repeat("x", 16<<10)
	var ids []string
	for i := 0; i < acked; i++ {
		id := fmt.Sprintf("ok-%04d", i)
		send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "read " + id, MessageID: id})
		m := decode[proto.Message](t, nextOf(t, first, "message"))
		if err := first.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID}); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 10*time.Second, func() error {
		r, err := h.ledger.Get(context.Background(), fmt.Sprintf("ok-%04d", acked-1))
		return poll.Want(err == nil && r.Status == status.Acked, "acks recorded")
	})
	// first stops reading now. The owed messages are pipelined: written
	// back to back while their ACKs are read.
	for i := 0; i < owed; i++ {
		ids = append(ids, fmt.Sprintf("owed-%04d", i))
	}
	sendPipelined(t, arch, ids, func(id string) proto.Frame {
		return proto.Frame{Type: "send", Target: "oracle", Content: body, MessageID: id}
	})
	poll.For(t, 15*time.Second, func() error { return poll.Want(h.b.ConnCount() == 1, "slow listener dropped") })
	handed := 0
	for _, id := range ids {
		if r, err := h.ledger.Get(context.Background(), id); err == nil && r.AckStatus == status.DeliveredWebSocket {
			handed++
		}
	}
	t.Logf("%d of %d owed messages were handed to the dead listener before it was dropped", handed, owed)

	next := h.as("oracle", true)
	got := map[string]int{}
	missing := len(ids)
	rctx, cancel := context.WithTimeout(context.Background(), poll.Floor)
	defer cancel()
	for missing > 0 {
		typ, raw, err := next.Next(rctx)
		if err != nil {
			t.Fatalf("new listener got %d of %d owed messages (%d handed to the dead one): %v", len(ids)-missing, len(ids), handed, err)
		}
		if typ != proto.TypeMessage {
			continue
		}
		m := decode[proto.Message](t, raw)
		if strings.HasPrefix(m.MessageID, "ok-") {
			t.Fatalf("acknowledged message %s offered again", m.MessageID)
		}
		if got[m.MessageID] == 0 && strings.HasPrefix(m.MessageID, "owed-") {
			missing--
		}
		got[m.MessageID]++
	}
	if handed == 0 {
		return
	}
	// The re-offer is on the record: a second delivered event marked reoffer.
	poll.For(t, 10*time.Second, func() error {
		evs, err := h.ledger.Events(context.Background(), ids[0])
		if err != nil {
			return poll.Want(false, "re-offer recorded")
		}
		for _, ev := range evs {
			if ev.Event == status.EventDelivered && strings.Contains(string(ev.Detail), `"reoffer":true`) {
				return poll.Want(true, "re-offer recorded")
			}
		}
		return poll.Want(false, "re-offer recorded")
	})
}

// TestUnackedReofferedAcrossRestart: what a listener was handed and did not
// acknowledge is offered again to the role's listener in the next session.
func TestUnackedReofferedAcrossRestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ledger.db")
	h := newHarnessAt(t, db, 1)
	l := h.as("oracle", true)
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "acked one", MessageID: "r-acked"})
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "never acked", MessageID: "r-owed"})
	for i := 0; i < 2; i++ {
		m := decode[proto.Message](t, nextOf(t, l, "message"))
		if m.MessageID == "r-acked" {
			if err := l.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	poll.For(t, 10*time.Second, func() error {
		a, err1 := h.ledger.Get(context.Background(), "r-acked")
		o, err2 := h.ledger.Get(context.Background(), "r-owed")
		return poll.Want(err1 == nil && err2 == nil && a.Status == status.Acked && o.AckStatus == status.DeliveredWebSocket, "handed and acked")
	})
	h.close()

	h2 := newHarnessAt(t, db, 2)
	back := h2.as("oracle", true)
	m := decode[proto.Message](t, nextOf(t, back, "message"))
	if m.MessageID != "r-owed" || !strings.HasPrefix(m.Content, "[delayed from session 1] ") {
		t.Fatalf("after restart got %+v; want r-owed, delayed", m)
	}
}

// TestHandoverAckPolicy: a listener registered with "ack":"handover" keeps
// the old rule (handed over is done): nothing it was handed is offered again.
func TestHandoverAckPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	reg := func() *client.Client {
		c := h.dial()
		if err := c.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeRegister, Role: "oracle", Token: h.tokens.Issue("oracle"), Listen: true, Ack: "handover"}); err != nil {
			t.Fatal(err)
		}
		nextOf(t, c, proto.TypeRegistered)
		return c
	}
	l := reg()
	arch := h.as("architect", false)
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "fire and forget", MessageID: "hv-1"})
	nextOf(t, l, "message")
	poll.For(t, 10*time.Second, func() error {
		r, err := h.ledger.Get(context.Background(), "hv-1")
		return poll.Want(err == nil && r.AckStatus == status.DeliveredWebSocket, "handed")
	})
	l.CloseNow()
	poll.For(t, 10*time.Second, func() error { return poll.Want(h.b.ConnCount() == 1, "listener gone") })
	l2 := reg()
	send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "sentinel", MessageID: "hv-2"})
	if m := decode[proto.Message](t, nextOf(t, l2, "message")); m.MessageID != "hv-2" {
		t.Fatalf("handover listener got %s again", m.MessageID)
	}
}

// TestOldDuplicateFoundInLedger: a repeat of a message whose number is long
// out of the sequencer's in-memory window is still recognised (from the
// ledger) and answered with the first ACK.
func TestOldDuplicateFoundInLedger(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 })
	arch := h.as("architect", false)
	const n = 1100 // beyond the in-memory window
	note := func(id string) proto.Frame {
		i := strings.TrimPrefix(id, "old-")
		return proto.Frame{Type: "send", Target: "oracle", Content: fmt.Sprintf("(ARCH #%s): note %s", i, i), MessageID: id}
	}
	first := send(t, arch, note("old-1"))
	var rest []string
	for i := 2; i <= n; i++ {
		rest = append(rest, fmt.Sprintf("old-%d", i))
	}
	sendPipelined(t, arch, rest, note)
	again := send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "(ARCH #1): note 1"})
	if !again.OK || !again.Dedupe || again.MessageID != "old-1" || again.Seq != first.Seq {
		t.Fatalf("old duplicate: ack = %+v", again)
	}
	reused := send(t, arch, proto.Frame{Type: "send", Target: "oracle", Content: "(ARCH #2): something else"})
	if !reused.OK || reused.Dedupe || len(reused.Warnings) != 1 || reused.Warnings[0] != broker.WarnSeqReused {
		t.Fatalf("old number, new body: ack = %+v", reused)
	}
}

// TestIdleUnregisteredClosed: a connection that never registers is closed
// after the register timeout; a registered one stays. The timeout is long
// enough for the kept connection's own register on a loaded machine (at
// 200 ms a make test run under load had the hub close it too).
func TestIdleUnregisteredClosed(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.RegisterTimeout = timeout })
	kept := h.as("architect", false)
	idle := h.dial()
	poll.For(t, 60*time.Second, func() error { return poll.Want(h.b.ConnCount() == 1, "idle connection closed") })
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if _, _, err := idle.Next(rctx); err != nil {
			if !client.IsClosed(err) {
				t.Fatalf("idle connection: %v; want closed by the hub", err)
			}
			break
		}
	}
	time.Sleep(timeout / 2) // the kept one is older than the timeout by now
	if a := send(t, kept, proto.Frame{Type: "send", Target: "oracle", Content: "still here"}); !a.OK {
		t.Fatalf("registered connection: %+v", a)
	}
}
