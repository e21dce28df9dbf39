// This file answers claim and claim-ack frames (docs/protocol.md §14): a
// CLI hook (`hm hook`) takes the messages queued for its role's pane that
// the pane has not begun to type, prints them into the agent's context, and
// names those it printed. They are recorded delivered.context; the others
// go back to the pane, as does everything a hook holds when its connection
// ends or its lease runs out, so a message is never lost between the two
// paths, and never delivered by both.

package broker

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// heldClaim is a message a connection claimed and has not settled.
type heldClaim struct {
	PaneClaim
	role, hook string
	lease      uint64 // the claim that took it
}

// claimLeases is a connection's claim state, guarded by conn.claimMu.
type claimLeases struct {
	held   map[string]heldClaim   // by message id
	timers map[uint64]*time.Timer // by lease: gives its messages back
	last   uint64                 // the newest lease
}

// claim answers a claim frame: the role's pane gives up to max queued
// messages whose typing has not begun, held for this connection until its
// claim-ack, the end of the connection or ClaimLease.
func (c *conn) claim(f proto.Frame) {
	var req proto.ClaimRequest
	if err := decodeQuery(f.Payload, &req); err != nil {
		c.sendProtoError(err, f.RequestID)
		return
	}
	max := req.Max
	switch {
	case max == 0:
		max = proto.DefaultClaimMax
	case max > proto.MaxClaim:
		max = proto.MaxClaim
	case max < 0:
		max = 0
	}
	c.mu.Lock()
	role := c.role
	c.mu.Unlock()
	hook := clip(req.Hook, 80)
	c.reportHookState(role, hook, req.State)
	c.reportSession(role, hook, req.SessionID)
	res := proto.ClaimResult{Role: role, Messages: []proto.ClaimedMessage{}, LeaseMs: c.b.cfg.ClaimLease.Milliseconds()}
	if req.Session {
		res.Session = c.b.sessionContext(role)
	}
	answer := func(res proto.ClaimResult) {
		c.sendJSON(proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID, OK: true, Result: res})
	}
	pc, ok := c.b.deps.Panes.(PaneClaimer)
	if !ok || max == 0 || role == "" {
		answer(res)
		return
	}
	if got := pc.Claim(role, max, req.MidTurn); len(got) > 0 || req.WaitMs <= 0 {
		c.hold(role, hook, got)
		res.Messages = claimedMessages(got)
		answer(res)
		return
	}
	wait := time.Duration(min(req.WaitMs, proto.MaxClaimWaitMs)) * time.Millisecond
	var since time.Time
	if req.WaitSinceMs > 0 {
		since = time.UnixMilli(req.WaitSinceMs)
	}
	c.waitClaim(role, hook, wait, since, max, req.MidTurn, pc, res, answer)
}

// reportHookState gives the pane of role the state a hook tells (a
// claim's, or a claim-ack's after the hook printed), if any.
func (c *conn) reportHookState(role, hook, state string) {
	if state == "" || role == "" {
		return
	}
	if sr, ok := c.b.deps.Panes.(PaneStateReporter); ok {
		if err := sr.ReportState(role, state); err != nil {
			c.b.log.Debug("hook state not taken", "role", role, "hook", hook, "err", err)
		}
	}
	if state == proto.PaneStateBusy {
		// The agent is at work: nothing wakes it now; its next stop
		// waits anew.
		c.b.wakers.busy(role, c.b.now())
	}
}

// reportSession gives the pane of role the CLI session id its hook
// reported, if any.
func (c *conn) reportSession(role, hook, id string) {
	if id == "" || role == "" {
		return
	}
	if sr, ok := c.b.deps.Panes.(PaneSessionReporter); ok {
		if err := sr.ReportSession(role, id); err != nil {
			c.b.log.Info("CLI session id not taken", "role", role, "hook", hook, "err", err)
		}
	}
}

// claimedMessages is how a claim's answer shows the messages it took.
func claimedMessages(got []PaneClaim) []proto.ClaimedMessage {
	out := make([]proto.ClaimedMessage, 0, len(got))
	for _, g := range got {
		out = append(out, proto.ClaimedMessage{MessageID: g.MessageID, Text: g.Text, Urgent: g.Urgent})
	}
	return out
}

// hold records claimed messages as this connection's, under a new lease
// that gives them back when it runs out.
func (c *conn) hold(role, hook string, got []PaneClaim) {
	if len(got) == 0 {
		return
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	l := &c.claims
	if l.held == nil {
		l.held, l.timers = map[string]heldClaim{}, map[uint64]*time.Timer{}
	}
	l.last++
	lease := l.last
	for _, g := range got {
		l.held[g.MessageID] = heldClaim{PaneClaim: g, role: role, hook: hook, lease: lease}
	}
	l.timers[lease] = time.AfterFunc(c.b.cfg.ClaimLease, func() {
		if n := c.returnClaims(lease); n > 0 {
			c.b.log.Warn("claimed messages given back to the pane: no claim-ack in time", "client", c.id, "role", role, "messages", n, "lease", c.b.cfg.ClaimLease)
		}
	})
}

// returnClaims gives back to the pane the messages of lease (0: of every
// lease) this connection still holds, and reports how many.
func (c *conn) returnClaims(lease uint64) int {
	c.claimMu.Lock()
	l := &c.claims
	var back []heldClaim
	for id, h := range l.held {
		if lease == 0 || h.lease == lease {
			back = append(back, h)
			delete(l.held, id)
		}
	}
	for n, t := range l.timers {
		if lease == 0 || n == lease {
			t.Stop()
			delete(l.timers, n)
		}
	}
	c.claimMu.Unlock()
	for _, h := range back {
		h.Return()
		c.b.wakers.notify(h.role) // claimable again
	}
	return len(back)
}

// claimAck answers a claim-ack frame: the named messages this connection
// holds were emitted into the agent's context and are recorded
// delivered.context (committed before the answer); every other message it
// holds goes back to the pane.
func (c *conn) claimAck(f proto.Frame) {
	var req proto.ClaimAck
	if err := decodeQuery(f.Payload, &req); err != nil {
		c.sendProtoError(err, f.RequestID)
		return
	}
	res := proto.ClaimAckResult{Delivered: []string{}, Returned: []string{}}
	var done []heldClaim
	c.claimMu.Lock()
	for _, id := range req.MessageIDs {
		switch h, ok := c.claims.held[id]; {
		case ok:
			done = append(done, h)
			delete(c.claims.held, id)
			res.Delivered = append(res.Delivered, id)
		case !slices.Contains(res.Delivered, id) && !slices.Contains(res.Unknown, id):
			res.Unknown = append(res.Unknown, id)
		}
	}
	for id := range c.claims.held {
		res.Returned = append(res.Returned, id)
	}
	c.claimMu.Unlock()
	slices.Sort(res.Returned)
	c.returnClaims(0)
	if len(done) > 0 {
		c.mu.Lock()
		role := c.role
		c.mu.Unlock()
		c.reportHookState(role, done[0].hook, req.State)
	}
	c.b.recordContext(done)
	c.sendJSON(proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID, OK: true, Result: res})
}

// recordContext commits each message a hook emitted as delivered.context
// (status routed, event context) and wakes those waiting on them.
func (b *Broker) recordContext(hs []heldClaim) {
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			b.advance(journal.Context(h.MessageID, h.role, h.hook))
		})
	}
	wg.Wait()
}

// sessionContext is role's place in the session, for an agent that starts
// or lost its context; nil for a role that is not a team member.
func (b *Broker) sessionContext(role string) *proto.SessionContext {
	m, ok := b.Team().Lookup(role)
	if !ok || m.Role != role {
		return nil
	}
	return &proto.SessionContext{SessionID: b.cfg.SessionID, Role: role, Header: m.Header,
		Line: roles.SessionLine(role, cmp.Or(b.cfg.SessionStarted, b.now())), Brief: b.Team().Brief(role), StartID: msgid.Session(b.cfg.Session, role)}
}

// sendProtoError answers a refused frame with an error frame carrying the
// refusal's code (bad_request for a bad payload).
func (c *conn) sendProtoError(err error, requestID string) {
	msg := err.Error()
	var pe *proto.Error
	if errors.As(err, &pe) {
		msg = pe.Message
	}
	c.sendError(proto.CodeOf(err), msg, requestID, "")
}

// errNotPrinted refuses a hook note's id (RecordPrinted).
var errNotPrinted = errors.New("not the note's role's, brokered after the note, or no longer brokered")

// RecordPrinted records what a hook printed into role's agent at atMs
// (Unix ms) under an earlier hub that died before the hook's claim-ack
// reached it (the hook's note, internal/ground/hooknote): each id that is
// role's message, brokered before atMs and still brokered, untouched since
// it was claimed, becomes delivered.context (journal.ContextFromNote),
// checked and written in one ledger transaction. The hub runs it at start,
// before anything is re-routed. It returns the ids recorded, and an error
// when the ledger could not record one (the note is then kept).
func (b *Broker) RecordPrinted(role, hook string, atMs int64, ids []string) ([]string, error) {
	check := func(m journal.Message) error {
		if m.TargetRole != role || m.BrokeredAtMs > atMs || m.Status != status.Brokered || m.AckStatus != "" {
			return errNotPrinted
		}
		return nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	errs := b.advanceEach(ids, func(id string) journal.Change { return journal.ContextFromNote(id, role, hook) }, check)
	var recorded []string
	var failed error
	for i, id := range ids {
		switch err := errs[i]; {
		case errors.Is(err, errNotPrinted) || errors.Is(err, journal.ErrNotFound):
			b.log.Debug("hook note: not recorded", "id", id, "role", role, "err", err)
		case err != nil:
			failed = cmp.Or(failed, fmt.Errorf("record %s from a hook note: %w", id, err))
		default:
			recorded = append(recorded, id)
			b.wake(id)
		}
	}
	return recorded, failed
}
