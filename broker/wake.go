// This file holds waiting claims (proto.ClaimRequest.WaitMs): Claude Code's
// asyncRewake Stop hook (`hm hook claude Stop --wait`) runs in the
// background once its agent stops, and asks the hub for the next message
// queued for its role's pane; given one, it wakes the idle session with it.
// A waiting claim takes what becomes claimable the moment the pane has it
// (or it is given back), in the same race with the typing that every claim
// runs: each message goes one way, exactly once (docs/protocol.md §14).

package broker

import (
	"sync"
	"time"

	"hm/broker/proto"
)

// claimRecheck is how often a waiting claim looks again without being
// woken: a safety net for a message that became claimable by a path that
// does not wake it (the typing gave it back unstarted, …). It runs only
// while the role's pane has messages queued (mayTurnClaimable): a message
// that arrives or is given back wakes the claim itself (#36).
const claimRecheck = time.Second

// mayTurnClaimable reports whether role's pane holds queued messages,
// which may turn claimable with no wake-up. Panes that cannot say
// (no PaneDescriber) are taken to hold some.
func mayTurnClaimable(pc PaneClaimer, role string) bool {
	d, ok := pc.(PaneDescriber)
	if !ok {
		return true
	}
	v, hosted := d.Describe(role)
	return hosted && v.Queued > 0
}

// claimWaiters are the waiting claims, one per role.
type claimWaiters struct {
	mu     sync.Mutex
	byRole map[string]*claimWaiter
	// busyAt is when a hook of the role last reported busy.
	busyAt map[string]time.Time
}

// claimWaiter is one connection's waiting claim.
type claimWaiter struct {
	wake chan struct{}       // something may be claimable (buffered 1)
	end  chan proto.Released // released without messages (buffered 1)
}

// add makes w role's waiting claim, releasing the one it supersedes. A
// claim whose stop (since) is older than the role's last busy report is
// released at once: the agent is at work again. since comes in whole
// milliseconds (waitSinceMs), so the busy report is compared in whole
// milliseconds too: one in the stop's own millisecond is the turn that
// stop ended.
func (ws *claimWaiters) add(role string, w *claimWaiter, since time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byRole == nil {
		ws.byRole = map[string]*claimWaiter{}
	}
	if old := ws.byRole[role]; old != nil {
		old.release(proto.ReleasedSuperseded)
	}
	ws.byRole[role] = w
	if busy, ok := ws.busyAt[role]; ok && !since.IsZero() && busy.UnixMilli() > since.UnixMilli() {
		w.release(proto.ReleasedBusy)
	}
}

// busy records that a hook of role reported busy now, and releases the
// role's waiting claim.
func (ws *claimWaiters) busy(role string, now time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.busyAt == nil {
		ws.busyAt = map[string]time.Time{}
	}
	ws.busyAt[role] = now
	if w := ws.byRole[role]; w != nil {
		w.release(proto.ReleasedBusy)
	}
}

// remove forgets w, if it is still role's waiting claim.
func (ws *claimWaiters) remove(role string, w *claimWaiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byRole[role] == w {
		delete(ws.byRole, role)
	}
}

// notify wakes role's waiting claim, if any.
func (ws *claimWaiters) notify(role string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.byRole[role]; w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *claimWaiter) release(why proto.Released) {
	select {
	case w.end <- why:
	default:
	}
}

// waitClaim holds c's claim for role open until the role's pane has a
// claimable message (claimed and held as any claim's), the claim is
// released, wait passes, or the connection ends (no answer then). It runs
// in its own goroutine, owned by c.
func (c *conn) waitClaim(role, hook string, wait time.Duration, since time.Time, max int, midTurn bool, pc PaneClaimer, res proto.ClaimResult, answer func(proto.ClaimResult)) {
	w := &claimWaiter{wake: make(chan struct{}, 1), end: make(chan proto.Released, 1)}
	ws := &c.b.wakers
	ws.add(role, w, since)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer ws.remove(role, w)
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		t := time.NewTimer(claimRecheck)
		defer t.Stop()
		var recheck <-chan time.Time
		arm := func() {
			recheck = nil
			if mayTurnClaimable(pc, role) {
				t.Reset(claimRecheck)
				recheck = t.C
			} else {
				t.Stop()
			}
		}
		arm()
		for {
			select {
			case <-c.ctx.Done():
				return
			case why := <-w.end:
				res.Released = why
				answer(res)
				return
			case <-deadline.C:
				res.Released = proto.ReleasedTimeout
				answer(res)
				return
			case <-w.wake:
			case <-recheck:
			}
			if got := pc.Claim(role, max, midTurn); len(got) > 0 {
				c.hold(role, hook, got)
				res.Messages = claimedMessages(got)
				answer(res)
				return
			}
			arm()
		}
	}()
}
