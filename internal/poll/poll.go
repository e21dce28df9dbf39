// Package poll waits in tests for a condition to hold, with a deadline,
// instead of sleeping a fixed time.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
var Interval = 5 * time.Millisecond

// Until checks cond every Interval until it holds, failing the test (and
// stopping it) if it still does not after timeout. what names the awaited
// condition in the failure.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(Interval)
	}
}
