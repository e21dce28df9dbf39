package layout

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Release frees the root even while another descriptor of the lock file
// is open: a child forked by another hub in the same process holds copies
// of every descriptor until it execs, and closing ours alone left the
// lock held, so a hub started right after (TestOneHubPerRoot's restart,
// under t.Parallel) was refused as "still starting".
func TestReleaseWithAnotherDescriptor(t *testing.T) {
	lay := Layout{Root: t.TempDir()}
	first, err := lay.LockHub()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Record(42, 7777); err != nil {
		t.Fatal(err)
	}
	// What a forked child holds until its exec.
	dup, err := unix.Dup(int(first.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	var are *AlreadyRunningError
	if _, err := lay.LockHub(); !errors.As(err, &are) || are.PID != 42 || are.Port != 7777 {
		t.Fatalf("second lock while held: %v", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	second, err := lay.LockHub()
	if err != nil {
		t.Fatalf("lock after Release, another descriptor still open: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
}
