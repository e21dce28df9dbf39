// Package poll waits in tests for a condition to hold, with a deadline,
// instead of sleeping a fixed time.
package poll

import (
	"fmt"
	"testing"
	"time"
)

// Interval is how soon For runs its check again after its first failure;
// each further failure waits a quarter longer, up to MaxInterval. A
// condition that holds soon is seen within milliseconds, and one that
// takes seconds (an unmarked wait, a restart) costs 20 checks a second
// rather than 200: a check is often a whole client round trip, and make
// test runs hundreds of them at once on two cores, under the race
// detector.
var Interval = 5 * time.Millisecond

// MaxInterval bounds the wait between two checks.
const MaxInterval = 50 * time.Millisecond

// Floor is the shortest deadline For keeps: a shorter one is raised to it. A
// deadline says how long a condition may take on a machine as loaded as a
// laptop mid-build (make test-loaded), never how fast it should be; speed
// belongs in make bench. Waiting costs nothing when the condition holds.
const Floor = 2 * time.Minute

// For runs check until it returns nil: at once, then after Interval, each
// wait a quarter longer than the last up to MaxInterval. If it still
// returns an error after timeout (at least Floor), the test fails and
// stops with that last error, so the failure says what the awaited state
// was and how far off it still was (the shape of nats-server's checkFor).
func For(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	wait(t, max(timeout, Floor), Interval, MaxInterval, check)
}

// Every is For checking every interval, never less often: for a
// benchmark that times the wait, to which For's backoff would add up to
// MaxInterval, and for a test that must see a state that lasts only
// milliseconds.
func Every(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	wait(t, max(timeout, Floor), interval, interval, check)
}

// wait is For without the Floor, waiting first, then up to most between
// two checks.
func wait(t testing.TB, timeout, first, most time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for next := first; ; next = min(next+next/4, most) {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %v", timeout, err)
		}
		time.Sleep(next)
	}
}

// Want is a check's verdict on a condition: nil when ok holds, else an error
// formatted from format and args, which should say what is awaited and what
// was seen instead, e.g. Want(n == 3, "3 deliveries, have %d", n).
func Want(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
