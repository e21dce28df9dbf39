// This file answers receipt frames (docs/protocol.md §14, "Receipts"): the
// [hm:<id>] markers of a prompt an agent's CLI submitted to its model, as
// its prompt-submit hook (or `hm receipt`) saw it. They prove that the
// messages typed into the pane reached the model: delivered.verified, and a
// merge when one prompt held several.

package broker

import (
	"context"
	"errors"
	"slices"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
)

// errOwnContext refuses a receipt for a message hm put in the agent's
// context itself: its marker in a prompt is hm's own output coming back.
var errOwnContext = errors.New("hm put this message in the agent's context itself (delivered.context): its marker proves nothing")

// receipt answers a receipt frame; the changes are committed before the
// answer.
func (c *conn) receipt(f proto.Frame) {
	var req proto.Receipt
	if err := decodeQuery(f.Payload, &req); err != nil {
		c.sendProtoError(err, f.RequestID)
		return
	}
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	res := c.b.receive(c.ctx, id, clip(req.Hook, 80), req.MessageIDs)
	c.sendJSON(proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID, OK: true, Result: res})
}

// receive records what one submitted prompt proves: each id that is the
// caller's and was not put in the agent's context by hm itself becomes
// delivered.verified (event acked), or, when the prompt held more than one
// such message, merged (event merged naming the others). A marker proves
// nothing for a message a hook delivered as context: the prompt then
// carried hm's own hook output (Gemini's AfterAgent reason, for one).
func (b *Broker) receive(ctx context.Context, id Identity, hook string, ids []string) proto.ReceiptResult {
	res := proto.ReceiptResult{Verified: []string{}}
	check := func(m journal.Message) error {
		if err := b.mayAcknowledge(id, m); err != nil {
			return err
		}
		if m.AckStatus == status.DeliveredContext {
			return errOwnContext
		}
		return nil
	}
	var proven []string
	for _, mid := range ids {
		if slices.Contains(proven, mid) || slices.Contains(res.Ignored, mid) {
			continue
		}
		m, err := b.deps.Ledger.Get(ctx, mid)
		if err == nil {
			err = check(m)
		}
		if err != nil || len(proven) == proto.MaxReceipt {
			b.log.Debug("receipt proves nothing", "id", mid, "by", id.Role, "hook", hook, "err", err)
			res.Ignored = append(res.Ignored, mid)
			continue
		}
		proven = append(proven, mid)
	}
	res.Merged = len(proven) > 1
	errs := b.advanceEach(proven, func(mid string) journal.Change { return receiptChange(mid, id.Role, hook, proven) }, check)
	for i, mid := range proven {
		b.wake(mid)
		if err := errs[i]; err != nil {
			b.log.Debug("receipt not recorded", "id", mid, "err", err)
			res.Ignored = append(res.Ignored, mid)
			continue
		}
		res.Verified = append(res.Verified, mid)
	}
	return res
}

// receiptChange is the ledger change a prompt's receipt makes for
// messageID, one of the prompt's proven ids: acked, or merged when there
// are others.
func receiptChange(messageID, by, hook string, prompt []string) journal.Change {
	if len(prompt) > 1 {
		return journal.Merged(messageID, by, hook, slices.DeleteFunc(slices.Clone(prompt), func(s string) bool { return s == messageID }))
	}
	return journal.Acked(messageID, by, hook)
}
