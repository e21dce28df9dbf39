//go:build linux

package agent

import (
	"testing"

	"github.com/creack/pty"
)

// TestSlaveNameOfMaster: a run a keeper handed over finds its terminal's
// path from the master (the unread-input witness opens it).
func TestSlaveNameOfMaster(t *testing.T) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer tty.Close()
	if got := slaveName(m); got != tty.Name() {
		t.Errorf("slaveName = %q, want %q", got, tty.Name())
	}
}
