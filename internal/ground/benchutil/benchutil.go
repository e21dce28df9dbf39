// Package benchutil holds the measurements shared by benchmarks in several
// packages (the broker's and the NATS JetStream comparison in
// internal/jsbench), so that both sides of a comparison are measured the
// same way.
package benchutil

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used so far, user plus
// system (getrusage RUSAGE_SELF). A benchmark that runs the server and
// its clients in one process takes the difference over its run: that is
// the CPU of the whole system under test, clients included.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Percentile is the value at quantile p (0..1) of d, by rank: the element
// at index p×(len-1) of the sorted durations. d is not modified.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// Micros is d in microseconds.
func Micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// Watchdog returns a context that ends once nothing has moved for stall:
// a benchmark calls moved after every unit of progress (an ACK, a
// delivery), so that a lost message ends its reads instead of hanging it.
// stop ends the watch; call it when done (the context is then cancelled
// too).
func Watchdog(parent context.Context, stall time.Duration) (ctx context.Context, moved func(), stop func()) {
	ctx, cancel := context.WithCancel(parent)
	var progress atomic.Int64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(stall / 10)
		defer tick.Stop()
		last, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if p := progress.Load(); p != last {
				last, since = p, time.Now()
			} else if time.Since(since) >= stall {
				cancel()
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() { progress.Add(1) }, func() { once.Do(func() { close(done); cancel() }) }
}
