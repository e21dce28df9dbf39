// Package leak checks that a test's goroutines are gone when it ends.
package leak

import (
	"runtime"
	"testing"
	"time"
)

// Deadline is how long Check waits for goroutines to end.
var Deadline = 10 * time.Second

// Check records the goroutine count now and, when the test's cleanups run
// (it registers its own first, so it runs last), waits up to Deadline for the
// count to come back down, failing the test with every stack if it does
// not. Call it first in the test.
func Check(t testing.TB) { CheckSlack(t, 0) }

// CheckSlack is Check allowing slack goroutines to remain (for runtimes
// that start long-lived helpers lazily, such as net/http's).
func CheckSlack(t testing.TB, slack int) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(Deadline)
		for {
			n := runtime.NumGoroutine()
			if n <= before+slack {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
