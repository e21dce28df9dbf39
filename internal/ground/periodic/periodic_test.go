package periodic

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestArmed: an Armed loop runs nothing until kicked, runs again after the
// delay fn returns, and goes back to waiting (no timer) once fn returns 0.
func TestArmed(t *testing.T) {
	cases := []struct {
		name   string
		rounds int64 // fn asks to be called again until it ran this often
	}{
		{"one call per kick", 1},
		{"armed until the work is done", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var calls atomic.Int64
			k := NewKick()
			var wg sync.WaitGroup
			wg.Go(func() {
				Armed(ctx, k, time.Millisecond, func() time.Duration {
					if calls.Add(1)%tc.rounds == 0 {
						return 0
					}
					return 5 * time.Millisecond
				})
			})
			defer func() { cancel(); wg.Wait() }()
			time.Sleep(100 * time.Millisecond)
			if n := calls.Load(); n != 0 {
				t.Fatalf("%d calls before any kick", n)
			}
			for round := int64(1); round <= 2; round++ {
				k.Kick()
				poll.For(t, 10*time.Second, func() error {
					n := calls.Load()
					return poll.Want(n >= round*tc.rounds, "%d calls, want %d", n, round*tc.rounds)
				})
				time.Sleep(100 * time.Millisecond) // disarmed: nothing more runs
				if n := calls.Load(); n != round*tc.rounds {
					t.Fatalf("after round %d: %d calls, want %d", round, n, round*tc.rounds)
				}
			}
		})
	}
}

// TestArmedGap: kicks that come faster than the gap are folded into one
// call per gap.
func TestArmedGap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	k := NewKick()
	var wg sync.WaitGroup
	wg.Go(func() { Armed(ctx, k, 200*time.Millisecond, func() time.Duration { calls.Add(1); return 0 }) })
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		k.Kick()
		time.Sleep(time.Millisecond)
	}
	// At most one call at the first kick and one per gap after it.
	if n := calls.Load(); n < 1 || n > 4 {
		t.Fatalf("%d calls in 500 ms of kicks with a 200 ms gap, want 1 to 4", n)
	}
}

// TestBell: a ring kicks every listener, and none after it stops listening.
func TestBell(t *testing.T) {
	var b Bell
	k1, stop1 := b.Listen()
	k2, stop2 := b.Listen()
	defer stop2()
	b.Ring()
	for i, k := range []Kick{k1, k2} {
		select {
		case <-k:
		default:
			t.Fatalf("listener %d not kicked", i+1)
		}
	}
	stop1()
	b.Ring()
	select {
	case <-k1:
		t.Fatal("kicked after it stopped listening")
	default:
	}
	<-k2
}
