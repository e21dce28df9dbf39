package agent

import (
	"context"
	"slices"
	"time"

	"hm/roles"
)

// The pane's queue of messages: first in, first out, urgent ones first.

// item is a queued delivery.
type item struct {
	d           Delivery
	enqueuedAt  time.Time
	headSeen    bool
	waited      time.Duration // deliberate waiting, excluded from CommitToFirstByte
	pointer     string        // pointer file written for this message
	entered     bool          // Submitted(false) already reported the first Enter
	unseen      int           // typings whose text never showed on the screen
	started     bool          // typing began: no urgent message goes ahead of it (guarded by qmu)
	seq         uint64        // arrival order (guarded by qmu): where Unclaim puts it back
	claimed     bool          // taken out by Claim and not given back (guarded by qmu)
	interrupted bool          // hm typed the profile's Interrupt for it (the delivery goroutine's)
	cleared     bool          // the input was seen empty after the interrupt
	uncleared   int           // tries at that which failed
	eraseDue    time.Time     // since when the erase after a typing that did not show may have missed it (eraseMissed); zero: none
}

// Enqueue adds a message to the pane's queue. It never blocks and never
// drops: messages wait while the pane is busy, exited or restarting. The
// queue is first in, first out, except that an urgent message jumps it: it
// goes after the message being typed (if any) and the urgent messages
// queued before it, ahead of every other waiting message, and a waiting
// head it overtakes gives way at once.
func (p *Pane) Enqueue(d Delivery) {
	d.Urgent = d.Urgent || roles.Urgent(d.Content, "")
	it := &item{d: d, enqueuedAt: time.Now()}
	p.qmu.Lock()
	if after := p.qafter; after != nil {
		p.qmu.Unlock()
		after(d) // closeQueue: this pane will never type it
		return
	}
	p.qseq++
	it.seq = p.qseq
	at := len(p.queue)
	if d.Urgent {
		at = 0
		for at < len(p.queue) && (p.queue[at].started || p.queue[at].d.Urgent) {
			at++
		}
	}
	p.queue = slices.Insert(p.queue, at, it)
	if at == 0 && len(p.queue) > 1 {
		p.jumpLocked() // the head waiting for readiness gives way
	}
	p.qmu.Unlock()
	select {
	case p.qwake <- struct{}{}:
	default:
	}
}

// startTyping marks it as being typed, unless an urgent message took its
// place at the head of the queue meanwhile (false).
func (p *Pane) startTyping(it *item) bool {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if len(p.queue) == 0 || p.queue[0] != it {
		return false
	}
	it.started = true
	return true
}

// overtaken reports whether it is no longer the head of the queue, and
// returns the channel closed when a message next jumps the queue.
func (p *Pane) overtaken(it *item) (bool, <-chan struct{}) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return len(p.queue) == 0 || p.queue[0] != it, p.qjump
}

// Undelivered returns the queued messages not yet delivered, in order (the
// one being typed included). After Stop these will never be typed.
func (p *Pane) Undelivered() []Delivery {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	out := make([]Delivery, len(p.queue))
	for i, it := range p.queue {
		out[i] = it.d
	}
	return out
}

// FailQueued fails (Delivery.Fail, on the calling goroutine) every message
// still queued, and every message enqueued from now on, with err: for a
// pane that will never run again (a background slot that ended), so that a
// delivery racing its end is not left queued for ever. Call it after Stop.
func (p *Pane) FailQueued(err error) {
	p.closeQueue(func(d Delivery) { d.Fail(err) })
}

// closeQueue makes after what becomes of every message still queued, and
// of every one enqueued or given back (Unclaim) from now on: the pane will
// never type them. after runs on the calling goroutine, without the
// pane's locks.
func (p *Pane) closeQueue(after func(Delivery)) {
	p.qmu.Lock()
	p.qafter = after
	left := p.queue
	p.queue = nil
	p.qmu.Unlock()
	for _, it := range left {
		after(it.d)
	}
}

// End stops the pane for good (a background slot that ended, a pane hm
// reload removed): Stop, then FailQueued with why, so that every message
// not yet entered ends failed with why as its reason, also one a dispatch
// racing the end enqueues later. It returns Stop's error; the messages are
// failed either way.
func (p *Pane) End(ctx context.Context, why error) error {
	err := p.Stop(ctx)
	p.FailQueued(why)
	return err
}

// ForwardQueued hands every message still queued to next, in order, and
// every message enqueued or given back (Unclaim) from now on: for a pane
// that another pane of the same role replaced (hm reload restarted it with
// a changed command or profile). next types each as a message never typed
// before: whole, as after a program that ended while it was being typed.
// Call it after Stop, which leaves queued only what was not entered.
func (p *Pane) ForwardQueued(next *Pane) { p.closeQueue(next.Enqueue) }

// deliverLoop is the pane's delivery engine: it owns the head of the queue.
func (p *Pane) deliverLoop() {
	var prevDone time.Time // when the previous message finished
	for {
		it := p.head(prevDone)
		if it == nil {
			return
		}
		done := p.deliver(it)
		p.qmu.Lock()
		if done {
			if i := slices.Index(p.queue, it); i >= 0 {
				p.queue = slices.Delete(p.queue, i, i+1)
			}
			prevDone = time.Now()
		}
		if in := p.interrupting; in != nil && (in == it && done || !slices.Contains(p.queue, in)) {
			p.interrupting = nil // its delivery ended: the cancelled turn is over
		}
		p.qmu.Unlock()
	}
}

// head waits for a queued message; nil once the pane stops. Time a message
// spent queued behind the previous one counts as deliberate waiting.
func (p *Pane) head(prevDone time.Time) *item {
	for {
		select {
		case <-p.stopCh:
			return nil
		default:
		}
		p.qmu.Lock()
		var it *item
		if len(p.queue) > 0 {
			it = p.queue[0]
		}
		p.qmu.Unlock()
		if it != nil {
			if !it.headSeen {
				it.headSeen = true
				if prevDone.After(it.enqueuedAt) {
					it.waited += prevDone.Sub(it.enqueuedAt)
				}
			}
			return it
		}
		if !p.idleWait() {
			return nil
		}
	}
}

// idleWait waits, the queue empty, for a message (or the pane's stop:
// false). While the last message entered is watched for at the input
// (heldWatch), it looks there too once the screen stood still for the
// quiet period after new output (watchHeld); a screen looked at that has
// not changed since is not looked at again, so a still pane has no timer.
func (p *Pane) idleWait() bool {
	p.mu.Lock()
	out := p.outChanged
	p.mu.Unlock()
	var still <-chan time.Time
	switch {
	case !p.heldWatch():
		out = nil // nothing to do on output alone
	case out != p.heldLooked:
		t := time.NewTimer(p.profile.Idle + heldRecheck)
		defer t.Stop()
		still = t.C
	}
	select {
	case <-p.qwake:
	case <-p.stopCh:
		return false
	case <-out: // not still yet: wait again
	case <-still:
		p.heldLooked = out
		p.watchHeld()
	}
	return true
}

// heldRecheck is added to the quiet period before an idle pane looks at
// its input again.
const heldRecheck = 100 * time.Millisecond
