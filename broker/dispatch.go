// This file routes a committed message to its recipients (listeners, panes,
// Telegram), records state changes and wakes those waiting for them.

package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/paneevents"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// dispatch hands a committed message to its recipients. prefix is prepended
// to the typed/sent content (used for delayed delivery). It reports whether
// a listener took the message.
func (b *Broker) dispatch(m journal.Message, rt route, prefix string) bool {
	content := prefix + m.RawBody
	urgent := roles.Urgent(m.RawBody, m.Priority)
	handed := false
	for _, mem := range rt.members {
		listened := b.toListeners(mem.Role, m, content)
		handed = handed || listened
		hosted := b.deps.Panes != nil && b.deps.Panes.Hosted(mem.Role)
		if mem.Background && mem.Transport == roles.TransportPTY && !hosted && !listened && len(rt.members) == 1 {
			// The slot ended after the send was checked, or the row is
			// recovered from an earlier session with no slot running:
			// nothing will ever take it.
			b.noRoute(m, mem.Role)
			continue
		}
		if mem.Transport == roles.TransportPTY && hosted {
			id := m.MessageID
			b.deps.Panes.Deliver(mem.Role, PaneDelivery{
				MessageID: id,
				Content:   content,
				Urgent:    urgent,
				Claimable: !listened,
				Callbacks: b.paneEvents(m, mem.Role),
			})
			if !listened {
				b.wakers.notify(mem.Role) // a waiting claim may take it
			}
		}
	}
	// A message for the user is shown in the hub's log: routed, with no
	// proof anyone read it.
	routedNoProof := rt.kind == roles.TargetUser
	if routedNoProof {
		b.log.Info("message for user", "from", m.SenderRole, "messageId", m.MessageID, "content", m.RawBody)
	}
	if b.deps.Notices != nil {
		b.deps.Notices.Routed(m)
	}
	if rt.telegram != "" && b.deps.Telegram != nil {
		b.sendTelegram(m, rt.telegram, routedNoProof)
	} else if routedNoProof {
		b.advance(journal.Shown(m.MessageID))
	}
	return handed
}

// stuck records that the pane of role could not get m submitted (ack
// status stuck; the status is unchanged, so a message never typed stays
// pending and is typed again after a restart) and tells m's sender with a
// system notice, never silently.
func (b *Broker) stuck(m journal.Message, role string, err error) {
	b.advance(journal.Stuck(m.MessageID, role, err))
	b.log.Warn("message stuck at a pane", "messageId", m.MessageID, "pane", role, "err", err)
	if b.deps.Notices != nil {
		b.deps.Notices.Stuck(m, role, err.Error())
	}
	b.tellSender(m, msgid.Stuck(m.MessageID), fmt.Sprintf("Your message %s to %s is stuck: %v. hm comms history shows it; it is typed again when the hub restarts if it never reached the program.", m.MessageID, role, err))
}

// paneFailed records that the pane of role could not take m at all (a
// background slot that ended first, a pointer file that could not be
// written): status failed, pane_failed; m's sender is told with a system
// notice.
func (b *Broker) paneFailed(m journal.Message, role string, err error) {
	b.advance(journal.PaneFailed(m.MessageID, status.CodePaneFailed, role, err.Error()))
	b.log.Warn("message failed at a pane", "messageId", m.MessageID, "pane", role, "err", err)
	b.tellSender(m, msgid.Failed(m.MessageID), fmt.Sprintf("Your message %s to %s failed: %v. It was not delivered; send it again if it still matters.", m.MessageID, role, err))
}

// noRoute records that m's target, a background slot, is not running to
// take it (status failed, no_route) and tells m's sender with a system
// notice.
func (b *Broker) noRoute(m journal.Message, role string) {
	b.advance(journal.PaneFailed(m.MessageID, status.CodeNoRoute, role, role+" is not running"))
	b.log.Warn("message for a background slot that is not running", "messageId", m.MessageID, "slot", role)
	b.tellSender(m, msgid.Failed(m.MessageID), fmt.Sprintf("Your message %s to %s failed: no_route: %s is not running. It was not delivered; spawn the slot and send it again if it still matters.", m.MessageID, role, role))
}

// tellSender sends m's sender a system notice with the hub-made id, in the
// background (the caller may be a pane's report). The hub's own rows get
// none, so a notice never begets notices.
func (b *Broker) tellSender(m journal.Message, id, text string) {
	if m.SenderRole == "" || m.SenderRole == roles.RoleSystem {
		return
	}
	b.goBackground(func() {
		_, err := b.Submit(b.ctx, Submission{From: roles.RoleSystem, Target: m.SenderRole, Content: text, Channel: ChannelSystem, MessageID: id, HubID: true})
		if err != nil && !errors.Is(err, proto.ErrNoRoute) && b.ctx.Err() == nil {
			b.log.Warn("tell the sender", "messageId", m.MessageID, "notice", id, "err", err)
		}
	})
}

func (b *Broker) sendTelegram(m journal.Message, chat string, alsoShown bool) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := b.deps.Telegram.Send(b.ctx, m.MessageID, chat, m.SenderRole, m.RawBody)
		switch {
		case err == nil:
			b.advance(journal.TelegramSent(m.MessageID))
		case alsoShown:
			b.advance(journal.TelegramFailed(m.MessageID, err))
		default:
			b.advance(journal.SendFailed(m.MessageID, status.CodeTelegramFailed, err.Error()))
		}
	}()
}

func bodyOf(content string) string {
	_, body, _ := roles.ParseHeader(content)
	return body
}

// advance commits a state change and wakes waiters. Errors are logged: the
// message stays in its earlier state and is retried after restart.
func (b *Broker) advance(c journal.Change) {
	_, err := b.deps.Ledger.Advance(b.ctx, c)
	b.advanced(c, err)
}

// advanceQueued is advance without the wait for the commit: c is queued
// behind every write queued before it, so a change advance makes later
// commits after it, and waiters are woken once it committed.
func (b *Broker) advanceQueued(c journal.Change) {
	if !b.deps.Ledger.AdvanceThen(c, nil, func(err error) { b.advanced(c, err) }) {
		b.wake(c.MessageID) // not queued (the ledger is closing; logged)
	}
}

// advanceEach queues change(id) for each of ids, each refused by check
// (run in the writer's transaction, on the row as it is there) or
// committed, and waits for them all. It returns each id's outcome, in
// order: nil once committed, check's error, journal.ErrNotFound, or
// journal.ErrClosed when the ledger could not take it.
func (b *Broker) advanceEach(ids []string, change func(id string) journal.Change, check func(journal.Message) error) []error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		if !b.deps.Ledger.AdvanceThen(change(id), check, func(err error) { errs[i] = err; wg.Done() }) {
			errs[i] = journal.ErrClosed
			wg.Done()
		}
	}
	wg.Wait()
	return errs
}

// advanced is what follows c's commit (or its failure, err).
func (b *Broker) advanced(c journal.Change, err error) {
	if err != nil {
		b.log.Warn("ledger advance failed", "messageId", c.MessageID, "status", c.Status, "err", err)
	}
	b.wake(c.MessageID)
}

// acknowledgeAsync is a message-ack from a client identified as id: only
// the operator or a recipient of the message (readerFor's Received: its
// target role, or a main pane a broadcast reached; never a row the hub
// only recorded, which not even the operator may acknowledge: that would
// make it a row roles read) may acknowledge it (SPEC §5.3). It does not
// wait: the change is queued for the ledger's writer, which checks who
// acknowledges against the row in the same transaction, and done is told
// the outcome once it is committed or refused (a role_mismatch
// *proto.Error, leaving the row unchanged; journal.ErrNotFound; or a
// ledger error).
func (b *Broker) acknowledgeAsync(messageID string, id Identity, done func(error)) {
	check := func(m journal.Message) error { return b.mayAcknowledge(id, m) }
	queued := b.deps.Ledger.AdvanceThen(ackChange(messageID, id.Role), check, func(err error) {
		b.wake(messageID)
		done(err)
	})
	if !queued {
		done(fmt.Errorf("acknowledge %s: %w", messageID, journal.ErrClosed))
	}
}

// mayAcknowledge is the rule of who may acknowledge m (a message-ack or a
// receipt): the operator or a recipient of m (readerFor's Received), and
// never for a row the hub only recorded, which not even the operator may
// acknowledge (acknowledged, it would become a row roles may read).
func (b *Broker) mayAcknowledge(id Identity, m journal.Message) error {
	switch {
	case id.Operator && !journal.ForRoles(m.Status):
		return refuse(status.CodeBadRequest, "%s was only recorded, never delivered: there is nothing to acknowledge", m.MessageID)
	case !id.Operator && !b.readerFor(id.Role).Received(m):
		return refuse(status.CodeRoleMismatch, "%s is for %s; %s may not acknowledge it", m.MessageID, m.TargetRole, id.Role)
	}
	return nil
}

// ackChange is the ledger change of a message-ack or receipt by role.
func ackChange(messageID, by string) journal.Change {
	return journal.Acked(messageID, by, "")
}

// Acknowledge marks a message delivered.verified (listener message-ack or a
// prompt-submit receipt). It does not check who acknowledges; see
// acknowledgeAsync.
func (b *Broker) Acknowledge(ctx context.Context, messageID, by string) error {
	if _, err := b.deps.Ledger.Get(ctx, messageID); err != nil {
		return fmt.Errorf("acknowledge %s: %w", messageID, err)
	}
	_, err := b.deps.Ledger.Advance(ctx, ackChange(messageID, by))
	b.wake(messageID)
	if err != nil {
		return fmt.Errorf("acknowledge %s: %w", messageID, err)
	}
	return nil
}

func (b *Broker) addWaiter(id string) chan struct{} {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.waiters[id] = append(b.waiters[id], ch)
	b.mu.Unlock()
	return ch
}

func (b *Broker) removeWaiter(id string, ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := b.waiters[id]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(b.waiters, id)
	} else {
		b.waiters[id] = ws
	}
}

func (b *Broker) wake(id string) {
	b.mu.Lock()
	for _, ch := range b.waiters[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
}

// toListeners hands m to every listener of role. It reports whether any
// listener took it.
func (b *Broker) toListeners(role string, m journal.Message, content string) bool {
	b.mu.Lock()
	ls := make([]*conn, 0, len(b.listeners[role]))
	for _, c := range b.listeners[role] {
		ls = append(ls, c)
	}
	b.mu.Unlock()
	took := false
	for _, c := range ls {
		if c.deliver(m, content) {
			took = true
		}
	}
	return took
}

func (c *conn) deliver(m journal.Message, content string) bool {
	return c.deliverWith(m, content, c.enqueueLive)
}

// paneEvents are the ledger's records of message m's typing into role's
// pane, one per event. Typed and Submitted bracket the Enter. Only a
// submission commits routed: a row typed but not submitted when the hub
// dies is still pending, and Recover types it again into the new program
// (the one that had it died with the hub's terminal); see docs/protocol.md,
// "kill -9 and panes". The typed record is queued, not waited for: the
// Enter does not wait for a commit that decides nothing (a row typed or
// not is typed again after a crash alike, and the entered log, not the
// ledger, tells an Enter that was written), and the submitted record,
// queued after it, commits after it (#36).
func (b *Broker) paneEvents(m journal.Message, role string) paneevents.Callbacks {
	id := m.MessageID
	return paneevents.Callbacks{
		Typed:     func() { b.advanceQueued(journal.Typed(id, role)) },
		Submitted: func(proven bool) { b.advance(journal.Submitted(id, role, proven)) },
		Failed:    func(err error) { b.paneFailed(m, role, err) },
		Stuck:     func(err error) { b.stuck(m, role, err) },
		// The program ended while the message was being typed: another
		// attempt (the row is unchanged but its attempt count), with the
		// reason, before it is typed again.
		Retyping: func(err error) { b.advance(journal.Attempt(id, role, err)) },
		// The pane's busy program was stopped for this urgent message:
		// its work was cut, and the ledger says why.
		Interrupted: func() { b.advance(journal.Interrupted(id, role)) },
		// After that interrupt the input held text hm did not type (the
		// interrupted prompt, put back): erased before this message, and
		// the ledger keeps what it was.
		Cleared: func(held string) { b.advance(journal.Cleared(id, role, clip(held, maxHeld))) },
	}
}
