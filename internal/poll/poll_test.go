package poll

import (
	"testing"
	"time"
)

type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Second, "three calls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times", n)
	}
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("Until did not fail the test: %v", r)
			}
		}()
		Until(f, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if f.msg == "" {
		t.Fatal("no failure message")
	}
}
