package leak

import (
	"testing"
	"time"
)

// fakeTB records Errorf calls and runs cleanups on demand.
type fakeTB struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Cleanup(fn func())              { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, a ...any) { f.failed = true }
func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCheckPassesWhenGoroutinesEnd(t *testing.T) {
	f := &fakeTB{TB: t}
	Check(f)
	done := make(chan struct{})
	go func() { <-done }()
	close(done)
	f.runCleanups()
	if f.failed {
		t.Fatal("a goroutine that ended was reported as leaked")
	}
}

func TestCheckFailsOnLeak(t *testing.T) {
	defer func(d time.Duration) { Deadline = d }(Deadline)
	Deadline = 100 * time.Millisecond
	f := &fakeTB{TB: t}
	Check(f)
	stop := make(chan struct{})
	go func() { <-stop }()
	start := time.Now()
	f.runCleanups()
	close(stop)
	if !f.failed || time.Since(start) < Deadline {
		t.Fatalf("leak not reported (failed=%v after %v)", f.failed, time.Since(start))
	}
}
