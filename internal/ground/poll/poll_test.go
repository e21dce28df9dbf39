package poll

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestFor(t *testing.T) {
	n := 0
	For(t, time.Second, func() error { n++; return Want(n == 3, "three calls, have %d", n) })
	if n != 3 {
		t.Fatalf("check called %d times", n)
	}
}

func TestForFailsWithTheLastError(t *testing.T) {
	f := &fatalTB{TB: t}
	n := 0
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("For did not fail the test: %v", r)
			}
		}()
		wait(f, 20*time.Millisecond, Interval, MaxInterval, func() error { n++; return fmt.Errorf("attempt %d", n) })
	}()
	if want := fmt.Sprintf("attempt %d", n); n < 2 || !strings.HasSuffix(f.msg, want) || !strings.Contains(f.msg, "timed out after 20ms") {
		t.Fatalf("failure %q after %d checks, want the timeout and %q", f.msg, n, want)
	}
}

func TestWant(t *testing.T) {
	if err := Want(true, "never"); err != nil {
		t.Fatalf("Want(true) = %v", err)
	}
	if err := Want(false, "%d rows, want %d", 1, 2); err == nil || err.Error() != "1 rows, want 2" {
		t.Fatalf("Want(false) = %v", err)
	}
}

// TestForBacksOff: a condition that takes long is checked less and less
// often, up to every MaxInterval (at a fixed 5 ms, 120 checks in 600 ms;
// a load that delays the sleeps only lowers the count).
func TestForBacksOff(t *testing.T) {
	f := &fatalTB{TB: t}
	n := 0
	func() {
		defer func() { _ = recover() }()
		wait(f, 600*time.Millisecond, Interval, MaxInterval, func() error { n++; return fmt.Errorf("attempt %d", n) })
	}()
	if n > 30 {
		t.Fatalf("%d checks in 600 ms, want at most 30", n)
	}
	if f.msg == "" {
		t.Fatalf("the wait did not time out")
	}
}
