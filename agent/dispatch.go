package agent

import (
	"log/slog"
	"sync"
)

// maxPendingLines bounds queued OnLine calls; beyond it lines are dropped
// (and counted) so that a slow OnLine during an output flood cannot grow
// memory without bound. Stage reports and exit notices are never dropped.
const maxPendingLines = 8192

// dispatcher runs a pane's callbacks (OnLine, OnExit, Delivery.Report) in
// order on one goroutine of its own, so that a slow callback never stalls the
// PTY reader or the delivery engine, and a callback may call Pane.Stop.
type dispatcher struct {
	log *slog.Logger

	mu      sync.Mutex
	queue   []func()
	lines   int // queued line callbacks
	dropped int // line callbacks dropped since the last warning
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newDispatcher(log *slog.Logger) *dispatcher {
	return &dispatcher{log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// post queues fn. Line callbacks (line == true) may be dropped when too many
// are pending.
func (d *dispatcher) post(fn func(), line bool) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	if line {
		if d.lines >= maxPendingLines {
			d.dropped++
			d.mu.Unlock()
			return
		}
		d.lines++
		inner := fn
		fn = func() {
			d.mu.Lock()
			d.lines--
			d.mu.Unlock()
			inner()
		}
	}
	d.queue = append(d.queue, fn)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// close makes run return once everything queued so far has run.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run executes queued callbacks until close; it closes d.done on return.
func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		batch := d.queue
		d.queue = nil
		closed := d.closed
		dropped := d.dropped
		d.dropped = 0
		d.mu.Unlock()
		if dropped > 0 {
			d.log.Warn("pane output lines not passed to OnLine: callback too slow", "dropped", dropped)
		}
		for _, fn := range batch {
			d.safeCall(fn)
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		<-d.wake
	}
}

// safeCall runs fn, logging instead of crashing the hub when it panics.
func (d *dispatcher) safeCall(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("pane callback panicked", "panic", r)
		}
	}()
	fn()
}
