// This file delivers to listeners: the queueing shared by live and replayed
// deliveries, and the replay of what a returning listener is owed.

package broker

import (
	"encoding/json"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
)

// enqueueLive queues a live delivery. While the backlog is replaying, the
// frame is held and queued once the replay is done (flushHeld): every row
// the replay hands over is older than any live one. A held frame that does
// not fit leaves its message pending for the replay loop; otherwise a full
// queue is a slow consumer and the client is dropped.
func (c *conn) enqueueLive(f outFrame) bool {
	c.mu.Lock()
	if c.replaying {
		defer c.mu.Unlock()
		if c.heldBytes+int64(len(f.data)) > maxQueuedBytes {
			return false
		}
		c.held = append(c.held, f)
		c.heldBytes += int64(len(f.data))
		return true
	}
	c.mu.Unlock()
	return c.enqueue(f)
}

func (c *conn) deliverWith(m journal.Message, content string, enqueue func(outFrame) bool) bool {
	c.mu.Lock()
	if _, dup := c.delivered[m.MessageID]; dup {
		c.mu.Unlock()
		return true
	}
	c.deliverGen++
	c.delivered[m.MessageID] = c.deliverGen
	prune := len(c.delivered) > c.pruneAt && !c.pruning
	if prune {
		c.pruning = true
	}
	c.mu.Unlock()
	if prune {
		c.b.startPrune(c)
	}
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
	// Handed to an earlier listener and not acknowledged: offered again
	// with the same messageId (SPEC §5.3, at-least-once).
	reoffer := m.Status == status.Routed
	ok := enqueue(outFrame{data: data, onWritten: func() {
		b.deps.Ledger.AdvanceAsync(journal.Delivered(id, c.id, reoffer))
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
// backpressure, until none are left; live messages arriving meanwhile are
// held (enqueueLive) and queued after the backlog, in the order they came.
func (b *Broker) replayPending(c *conn, role string) {
	c.replayMu.Lock()
	defer c.replayMu.Unlock()
	c.mu.Lock()
	c.replaying = true
	c.mu.Unlock()
	for b.replayPass(c, role) > 0 {
	}
	c.flushHeld()
}

// flushHeld queues the frames held during a replay, then ends the replay:
// frames held while it queues are queued too, so none is overtaken.
func (c *conn) flushHeld() {
	for {
		c.mu.Lock()
		held := c.held
		if len(held) == 0 {
			c.replaying = false
			c.heldBytes = 0
			c.mu.Unlock()
			return
		}
		c.held, c.heldBytes = nil, 0
		c.mu.Unlock()
		for _, f := range held {
			if !c.enqueueWait(f) {
				c.mu.Lock()
				c.held, c.heldBytes, c.replaying = nil, 0, false
				c.mu.Unlock()
				return // the connection is gone: what it was owed stays owed
			}
		}
	}
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
// how many it delivered. The caller holds c.replayMu.
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

// minPruneAt is the size of a connection's delivered set that starts its
// first prune; later prunes start at twice what the last one kept (and at
// least this), so pruning costs O(1) amortized per delivery.
const minPruneAt = 1024

// startPrune runs pruneDelivered for c in the background (deliverWith may
// be called from a replay, which holds c.replayMu).
func (b *Broker) startPrune(c *conn) {
	if !b.goBackground(func() { b.pruneDelivered(c) }) {
		c.mu.Lock()
		c.pruning = false
		c.mu.Unlock()
	}
}

// goBackground runs fn on a goroutine that Close waits for; false (fn not
// run) once the broker is closed.
func (b *Broker) goBackground(fn func()) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		fn()
	}()
	return true
}

// pruneDelivered drops from c's delivered set the ids the ledger no longer
// owes c's role (acknowledged, or handed over under the handover policy):
// no replay can offer them again, because statuses only move forward. It
// holds replayMu, so no replay pass works from a snapshot older than its
// own, and keeps every id delivered after its snapshot was started. The
// set is rebuilt, so the memory of a large one is given back.
func (b *Broker) pruneDelivered(c *conn) {
	c.replayMu.Lock()
	defer c.replayMu.Unlock()
	c.mu.Lock()
	gen, role := c.deliverGen, c.role
	c.mu.Unlock()
	c.mu.Lock()
	handover := c.handover
	c.mu.Unlock()
	still, err := b.deps.Ledger.OwedIDs(c.ctx, role, !handover)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruning = false
	if err != nil {
		if c.ctx.Err() == nil {
			b.log.Warn("prune delivered set", "client", c.id, "role", role, "err", err)
		}
		c.pruneAt = max(c.pruneAt, 2*len(c.delivered))
		return
	}
	kept := make(map[string]uint64, len(c.delivered)/2)
	for id, g := range c.delivered {
		if _, owes := still[id]; owes || g > gen {
			kept[id] = g
		}
	}
	c.delivered = kept
	c.pruneAt = max(minPruneAt, 2*len(kept))
}
