// This file is the ACK side of the submit path: the answer to a duplicate
// and the wait for a definitive delivery stage (SPEC §5.2).

package broker

import (
	"context"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
)

// duplicateAck answers a messageId already in the ledger: the sender that
// used it gets its first copy's state repeated (dedupe); any other sender
// is refused with duplicate_id, so its message never silently vanishes.
func (b *Broker) duplicateAck(ack proto.Ack, prev journal.Message, sender string) (proto.Ack, error) {
	if prev.SenderRole != sender {
		ack.Seq = 0 // the number was taken back: nothing was stored
		return ack, refuseDuplicateID(prev.MessageID)
	}
	return b.repeatAck(prev), nil
}

// refuseDuplicateID refuses a messageId another sender used first.
func refuseDuplicateID(id string) error {
	return refuse(status.CodeDuplicateID, "messageId %s was already used by another sender; choose another id", id)
}

// repeatAck answers a duplicate with the first copy's state.
func (b *Broker) repeatAck(m journal.Message) proto.Ack {
	ack := proto.Ack{
		MessageID: m.MessageID, OK: true, Accepted: true, Seq: m.Seq, Header: m.Header,
		Dedupe: true, Warnings: []string{},
	}
	ack.SetStage(ackStatusOf(m))
	if !ack.Stage().Delivered() && b.handedToListener(m.MessageID) {
		// The ledger records the hand-over once the frame is written;
		// the first ACK said delivered.websocket as soon as a listener
		// took it.
		ack.SetStage(status.DeliveredWebSocket)
	}
	if m.Status == status.Failed {
		ack.Refuse(m.ErrorCode, "")
	}
	return ack
}

// handedToListener reports whether a live listener has taken the message
// id (its frame queued or written).
func (b *Broker) handedToListener(id string) bool {
	b.mu.Lock()
	var ls []*conn
	for _, m := range b.listeners {
		for _, c := range m {
			ls = append(ls, c)
		}
	}
	b.mu.Unlock()
	for _, c := range ls {
		c.mu.Lock()
		_, took := c.delivered[id]
		c.mu.Unlock()
		if took {
			return true
		}
	}
	return false
}

// ackStatusOf maps a ledger row to the ACK status vocabulary.
func ackStatusOf(m journal.Message) status.Stage {
	switch m.AckStatus {
	case status.DeliveredVerified, status.DeliveredContext, status.DeliveredWebSocket:
		return m.AckStatus
	}
	return status.AcceptedUnverified
}

// waitDefinitive waits up to d for a definitive stage: delivered.* or a
// failure (SPEC §5.2 waitMs).
func (b *Broker) waitDefinitive(ctx context.Context, ack proto.Ack, d time.Duration, wake chan struct{}) proto.Ack {
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		m, err := b.deps.Ledger.Get(ctx, ack.MessageID)
		if err == nil {
			if m.Status == status.Failed {
				ack.Refuse(m.ErrorCode, "")
				return ack
			}
			if st := ackStatusOf(m); st.Delivered() {
				ack.SetStage(st)
				return ack
			}
		}
		select {
		case <-wake:
		case <-timer.C:
			return ack
		case <-ctx.Done():
			return ack
		case <-b.ctx.Done():
			return ack
		}
	}
}
