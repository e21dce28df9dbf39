package agent

import (
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestOutputPending: what a program wrote that hm has not read yet is
// counted on the master (the screen is behind it by that much), and
// nothing once it was read. (A look at the screen that waited for hm to
// catch up with it was tried and taken out again: see the closing note of
// session 15.)
func TestOutputPending(t *testing.T) {
	t.Parallel()
	spec := &Spec{Command: "printf 'hello, pending'; sleep 30", Env: []string{"PATH=/usr/bin:/bin"}}
	pr, err := startProc(spec, spec.Command, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = signalGroup(pr.pid, 9)
		_ = pr.cmd.Wait()
		pr.master.Close()
	})
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(pr.outputPending() >= len("hello, pending"), "pending output %d", pr.outputPending())
	})
	buf := make([]byte, 64)
	n, err := pr.master.Read(buf)
	if err != nil || n == 0 {
		t.Fatalf("read: %d, %v", n, err)
	}
	if got := pr.outputPending(); got != len("hello, pending")-n {
		t.Errorf("after reading %d bytes: pending %d, want %d", n, got, len("hello, pending")-n)
	}
}
