package broker

import (
	"testing"
	"time"

	"hm/broker/proto"
)

// TestWaitSinceMillisecond: a waiting claim's stop time comes in whole
// milliseconds (waitSinceMs). A busy report in the same millisecond as the
// stop, before it, is the turn that stop ended: it must not release the
// claim. Compared at nanoseconds with the truncated stop it did, and the
// wake was lost (TestHookWake/MessageWakes failed under load, its drain's
// PostToolUse hook and the Stop hook a fraction of a millisecond apart).
func TestWaitSinceMillisecond(t *testing.T) {
	t.Parallel()
	ms := time.UnixMilli(1_700_000_000_123)
	cases := []struct {
		name        string
		busy, since time.Time
		released    bool
	}{
		{"busy earlier in the stop's millisecond", ms.Add(300 * time.Microsecond), ms, false},
		{"busy in a millisecond before the stop's", ms.Add(-700 * time.Microsecond), ms, false},
		{"busy a millisecond after the stop", ms.Add(time.Millisecond + 100*time.Microsecond), ms, true},
		{"no stop time", ms, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ws claimWaiters
			ws.busy("builder", tc.busy)
			w := &claimWaiter{wake: make(chan struct{}, 1), end: make(chan proto.Released, 1)}
			ws.add("builder", w, tc.since)
			var got bool
			select {
			case why := <-w.end:
				got = why == proto.ReleasedBusy
			default:
			}
			if got != tc.released {
				t.Fatalf("released busy = %v, want %v", got, tc.released)
			}
		})
	}
}
