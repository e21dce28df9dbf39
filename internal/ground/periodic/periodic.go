// Package periodic runs a function on a timer until its context ends: a
// plain ticker (Run) for work that is there as long as the loop runs, and
// a loop armed by the events that create its work (Armed, Kick, Bell), so
// that an idle hub runs no timer at all (#36).
package periodic

import (
	"context"
	"sync"
	"time"
)

// Run calls fn every d until ctx ends. The first call is after d.
func Run(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Kick wakes one Armed loop: it says that work may be waiting. Kicks that
// come before the loop takes one are folded into one.
type Kick chan struct{}

// NewKick returns a Kick.
func NewKick() Kick { return make(Kick, 1) }

// Kick marks work; it never blocks.
func (k Kick) Kick() {
	select {
	case k <- struct{}{}:
	default:
	}
}

// Armed calls fn each time kick fires, and again after the delay fn
// returns, until ctx ends. fn returning 0 (or less) disarms the loop: it
// then waits for the next kick with no timer running. Calls are at least
// gap apart, the loop's start counting as one: kicks in between are folded
// into the next call, which comes once gap has passed since the last.
// Nothing runs before the first kick.
func Armed(ctx context.Context, kick <-chan struct{}, gap time.Duration, fn func() time.Duration) {
	last := time.Now()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var due <-chan time.Time // nil while disarmed
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-due:
		}
		if wait := gap - time.Since(last); wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			select { // folded into this call
			case <-kick:
			default:
			}
		}
		last = time.Now()
		due = nil
		if d := fn(); d > 0 {
			t.Reset(d)
			due = t.C
		} else {
			t.Stop()
		}
	}
}

// Bell kicks every listener at once: one event that several Armed loops
// wait for. The zero Bell is ready to use.
type Bell struct {
	mu sync.Mutex
	ks map[*Kick]struct{}
}

// Ring kicks every listener; it never blocks.
func (b *Bell) Ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.ks {
		k.Kick()
	}
}

// Listen returns a kick that each Ring fires, and the function that ends
// the listening.
func (b *Bell) Listen() (Kick, func()) {
	k := NewKick()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ks == nil {
		b.ks = map[*Kick]struct{}{}
	}
	b.ks[&k] = struct{}{}
	return k, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.ks, &k)
	}
}
