package agent

import (
	"slices"
)

// Another path may deliver a queued message instead of the pane: a CLI
// hook that puts it in the agent's context (docs/protocol.md §14). Claim
// and the typing take messages from the same queue under the same lock, so
// that each message goes one way or the other, never both.

// Claimed is a message Claim took out of a pane's queue.
type Claimed struct {
	// MessageID and Urgent are the delivery's.
	MessageID string
	Urgent    bool
	// Text is the message as the agent's context shows it: like a typed
	// message, AgentPrefix, the neutralised content and the "[hm:<id>]"
	// trailer, but with its lines as they are (no terminal to survive),
	// and a body over MaxInlineBody replaced by its pointer line (the
	// pointer file is written, as a typing would).
	Text string
	it   *item
}

// Claim takes out of the queue, in queue order, up to max messages that are
// Claimable and whose typing has not begun, for another path to deliver:
// the pane does not type them, and calls none of their Delivery callbacks.
// The message being typed, and any message typed before (its text may have
// reached the program), is never taken. A message whose pointer file
// cannot be written stays queued. The taker gives back with Unclaim what it
// did not deliver. Claim never waits for the program.
//
// midTurn says the taker puts the messages into the turn under way (a tool
// or stop hook), not into a new prompt. While an interrupt hm sent is in
// flight such a claim takes nothing: the turn it joins may be the one the
// interrupt cancelled, whose hook output the program drops (Gemini runs
// AfterAgent for a cancelled turn and throws its answer away). The messages
// stay queued and are typed once the program is ready.
func (p *Pane) Claim(max int, midTurn bool) []Claimed {
	if max <= 0 {
		return nil
	}
	var taken []*item
	p.qmu.Lock()
	if midTurn && p.interrupting != nil {
		id := p.interrupting.d.MessageID
		p.qmu.Unlock()
		p.log.Info("mid-turn claim refused: an interrupt hm sent is in flight", "for", id)
		return nil
	}
	var head *item
	if len(p.queue) > 0 {
		head = p.queue[0]
	}
	n := 0
	for _, it := range p.queue {
		if len(taken) < max && it.d.Claimable && !it.started {
			it.claimed = true
			taken = append(taken, it)
			continue
		}
		p.queue[n] = it
		n++
	}
	clear(p.queue[n:])
	p.queue = p.queue[:n]
	if len(taken) > 0 && taken[0] == head {
		p.jumpLocked() // the delivery loop waiting for it goes on
	}
	p.qmu.Unlock()

	out := make([]Claimed, 0, len(taken))
	var back []Claimed
	for _, it := range taken {
		c := Claimed{MessageID: it.d.MessageID, Urgent: it.d.Urgent, it: it}
		comp := composeContext(it.d.MessageID, it.d.Content, p.pointerPath(it))
		if comp.Pointer && it.pointer == "" {
			path, err := p.writePointer(it, comp.Body)
			if err != nil {
				p.log.Warn("claimed message kept for typing: no pointer file", "id", it.d.MessageID, "err", err)
				back = append(back, c)
				continue
			}
			it.pointer = path
		}
		c.Text = comp.Text
		out = append(out, c)
	}
	p.Unclaim(back...)
	return out
}

// Unclaim gives claimed messages back to the queue, each where it would be
// had it never left (by arrival, urgent ones first, behind the message being
// typed), to be typed. A message given back twice, or never claimed, is
// ignored.
func (p *Pane) Unclaim(cs ...Claimed) {
	if len(cs) == 0 {
		return
	}
	p.qmu.Lock()
	jumped := false
	var closed []*item
	for _, c := range cs {
		it := c.it
		if it == nil || !it.claimed {
			continue
		}
		it.claimed = false
		if p.qafter != nil {
			closed = append(closed, it) // closeQueue: this pane will never type it
			continue
		}
		at := 0
		for at < len(p.queue) && (p.queue[at].started || !queuedBefore(it, p.queue[at])) {
			at++
		}
		p.queue = slices.Insert(p.queue, at, it)
		jumped = jumped || at == 0 && len(p.queue) > 1
	}
	if jumped {
		p.jumpLocked() // the head waiting for readiness gives way
	}
	after := p.qafter
	p.qmu.Unlock()
	for _, it := range closed {
		after(it.d)
	}
	select {
	case p.qwake <- struct{}{}:
	default:
	}
}

// queuedBefore reports whether a goes ahead of b in the queue: urgent
// messages first, then by arrival.
func queuedBefore(a, b *item) bool {
	if a.d.Urgent != b.d.Urgent {
		return a.d.Urgent
	}
	return a.seq < b.seq
}

// jumpLocked tells the delivery loop that the head of the queue changed
// under it. The caller holds qmu.
func (p *Pane) jumpLocked() {
	close(p.qjump)
	p.qjump = make(chan struct{})
}
