package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/status"
	"hm/journal"
)

// TestAbruptSenderCloseStrandsNothing: senders pipelining sends drop their
// sockets mid-burst. Every row the ledger committed must still be routed in
// this session, and no (sender, seq) pair may be issued twice.
func TestAbruptSenderCloseStrandsNothing(t *testing.T) {
	h := newHarness(t, withPanes("builder"), func(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 })
	const senders, per = 20, 300
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
			cut := per/3 + (i*37)%(per/2) // each sender stops somewhere mid-burst
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
	deadline := time.Now().Add(15 * time.Second)
	for {
		var err error
		rows, err = h.ledger.History(ctx, journal.HistoryQuery{SessionID: "app-session-1"})
		if err != nil {
			t.Fatal(err)
		}
		stranded := 0
		for _, r := range rows {
			if r.Status == string(status.Brokered) {
				stranded++
			}
		}
		if stranded == 0 && h.b.ConnCount() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d committed rows still %s (never routed) after the senders left", stranded, len(rows), status.Brokered)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
