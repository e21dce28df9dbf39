// This file delivers to listeners: the queueing shared by live and replayed
// deliveries, and the replay of what a returning listener is owed.

package broker

import (
	"encoding/json"
	"time"

	"hm/broker/proto"
	"hm/internal/status"
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
	detail := map[string]any{"client": c.id}
	if m.Status == status.Routed {
		// Handed to an earlier listener and not acknowledged: offered again
		// with the same messageId (SPEC §5.3, at-least-once).
		detail["reoffer"] = true
	}
	ok := enqueue(outFrame{data: data, onWritten: func() {
		b.deps.Ledger.AdvanceAsync(journal.Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered, Detail: detail})
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
	c.replayMu.Lock()
	defer c.replayMu.Unlock()
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

// owed returns what a listener of role is owed, in row order: the pending
// rows and, unless its ack policy is handover, the rows handed to a
// listener and not acknowledged.
func (b *Broker) owed(c *conn, role string) ([]journal.Message, error) {
	pending, err := b.deps.Ledger.Pending(c.ctx, role)
	if err != nil || c.handover {
		return pending, err
	}
	unacked, err := b.deps.Ledger.Unacked(c.ctx, role)
	if err != nil || len(unacked) == 0 {
		return pending, err
	}
	out := make([]journal.Message, 0, len(pending)+len(unacked))
	i, j := 0, 0
	for i < len(pending) || j < len(unacked) {
		if j == len(unacked) || (i < len(pending) && pending[i].RowID < unacked[j].RowID) {
			out = append(out, pending[i])
			i++
		} else {
			out = append(out, unacked[j])
			j++
		}
	}
	return out, nil
}

// replayPass delivers the rows c is owed and has not been given; it returns
// how many it delivered.
func (b *Broker) replayPass(c *conn, role string) int {
	pending, err := b.owed(c, role)
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
