package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tmux is a tmux server of a test's own (its own socket and config, /bin/sh
// as its shell): the floor that hm's benchmarks measure against in the same
// run.
type Tmux struct {
	t         testing.TB
	bin, sock string
	conf      string
	killed    bool
}

// StartTmux starts a tmux server whose first session, detached and cols x
// rows, runs command (a /bin/sh command line); conf holds tmux commands
// read at the server's start ("" for none). The server is killed at t's
// cleanup, or earlier by Kill. A missing tmux fails t: the floor cannot
// be left out.
func StartTmux(t testing.TB, conf string, cols, rows int, command string) *Tmux {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed for the floor hm is measured against: run `make deps` (%v)", err)
	}
	dir := t.TempDir()
	s := &Tmux{t: t, bin: bin, sock: filepath.Join(dir, "tmux.sock"), conf: filepath.Join(dir, "tmux.conf")}
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Run("new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), command)
	t.Cleanup(s.Kill)
	return s
}

// Command is the tmux command args against this server, not started.
func (s *Tmux) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(s.bin, append([]string{"-S", s.sock, "-f", s.conf}, args...)...)
	cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	return cmd
}

// Run runs the tmux command args and returns its output, trimmed; a
// failure fails the test.
func (s *Tmux) Run(args ...string) string {
	s.t.Helper()
	out, err := s.Command(args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// PID returns the server's process id.
func (s *Tmux) PID() int {
	s.t.Helper()
	out := s.Run("display-message", "-p", "#{pid}")
	pid, err := strconv.Atoi(out)
	if err != nil {
		s.t.Fatalf("tmux server pid %q: %v", out, err)
	}
	return pid
}

// Kill ends the server (once; later calls do nothing).
func (s *Tmux) Kill() {
	if s.killed {
		return
	}
	s.killed = true
	_ = s.Command("kill-server").Run()
}
