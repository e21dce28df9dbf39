// This file delivers to listeners: the queueing shared by live and replayed
// deliveries, and the replay of what a returning listener is owed.

package broker

import (
	"encoding/json"
	"time"

	"hm/broker/proto"
	"hm/journal"
)

// enqueueLive queues a live delivery. While the backlog is replaying, a
// full queue leaves the message pending for the replay loop; otherwise a
// full queue is a slow consumer and the client is dropped.
func (c *conn) enqueueLive(f outFrame) bool {
	c.mu.Lock()
	replaying := c.replaying
	c.mu.Unlock()
	if !replaying {
		return c.enqueue(f)
	}
	if !c.hasRoom(len(f.data)) {
		return false
	}
	c.queued.Add(int64(len(f.data)))
	select {
	case c.out <- f:
		return true
	default:
		c.queued.Add(-int64(len(f.data)))
		return false
	}
}

func (c *conn) deliverWith(m journal.Message, content string, enqueue func(outFrame) bool) bool {
	c.mu.Lock()
	if _, dup := c.delivered[m.MessageID]; dup {
		c.mu.Unlock()
		return true
	}
	c.delivered[m.MessageID] = struct{}{}
	c.mu.Unlock()
	meta := json.RawMessage(m.MetadataJSON)
	if !json.Valid(meta) {
		meta = json.RawMessage("{}")
	}
	data, err := json.Marshal(proto.Message{
		Type: proto.TypeMessage, From: m.SenderRole, MessageID: m.MessageID, Seq: m.Seq,
		Content: content, Priority: m.Priority, Metadata: meta, Timestamp: m.BrokeredAtMs,
	})
	if err != nil {
		return false
	}
	id, b := m.MessageID, c.b
	ok := enqueue(outFrame{data: data, onWritten: func() {
		b.deps.Ledger.AdvanceAsync(journal.Change{MessageID: id, Status: "routed", AckStatus: proto.StatusDeliveredWebsocket, Event: "delivered", Detail: map[string]any{"client": c.id}})
		b.wake(id)
	}})
	if !ok {
		c.mu.Lock()
		delete(c.delivered, m.MessageID)
		c.mu.Unlock()
	}
	return ok
}

// replayPending delivers messages that waited in the ledger for role, with
// backpressure, until none are left (live messages arriving meanwhile stay
// pending and are picked up by the next pass).
func (b *Broker) replayPending(c *conn, role string) {
	c.mu.Lock()
	c.replaying = true
	c.mu.Unlock()
	for b.replayPass(c, role) > 0 {
	}
	c.mu.Lock()
	c.replaying = false
	c.mu.Unlock()
	b.replayPass(c, role) // anything skipped while the flag was being cleared
}

// replayPass delivers the pending rows not yet delivered on c; it returns
// how many it delivered.
func (b *Broker) replayPass(c *conn, role string) int {
	pending, err := b.deps.Ledger.Pending(c.ctx, role)
	if err != nil {
		if c.ctx.Err() == nil {
			b.log.Warn("load pending for listener", "role", role, "err", err)
		}
		return 0
	}
	now := b.now()
	n := 0
	for _, m := range pending {
		c.mu.Lock()
		_, done := c.delivered[m.MessageID]
		c.mu.Unlock()
		if done {
			continue
		}
		prefix := ""
		if m.SessionID != b.cfg.SessionID {
			if now.Sub(time.UnixMilli(m.BrokeredAtMs)) > b.cfg.DelayedMaxAge {
				continue // Recover expires it
			}
			prefix = delayedPrefix(m)
		}
		if !c.deliverWith(m, prefix+m.RawBody, c.enqueueWait) {
			return 0
		}
		n++
	}
	return n
}
