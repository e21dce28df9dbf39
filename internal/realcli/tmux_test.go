package realcli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// term is a real terminal a person would use: a tmux session on a
// private server, running one command (hm attach), read back as rendered
// rows. The suite uses it to type as a person and to show a pane's screen
// in failure messages.
type term struct {
	t    testing.TB
	sock string
	env  []string
}

// newTerm starts a detached 120x40 tmux session running argv with env; it
// is killed, with its server, at cleanup.
func newTerm(t testing.TB, env []string, argv ...string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed to attach to panes as a person would: run `make deps` (%v)", err)
	}
	dir, err := os.MkdirTemp("", "hm-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, sock: dir + "/s", env: append(env, "TERM=xterm-256color")}
	t.Cleanup(func() {
		_, _ = tm.run("kill-server")
		os.RemoveAll(dir)
	})
	args := append([]string{"new-session", "-d", "-x", "120", "-y", "40", "--"}, argv...)
	if out, err := tm.run(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	return tm
}

func (tm *term) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", tm.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = tm.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// screen is what the terminal shows, trailing blank rows dropped.
func (tm *term) screen() string {
	out, err := tm.run("capture-pane", "-p")
	if err != nil {
		return fmt.Sprintf("(tmux capture-pane: %v: %s)", err, out)
	}
	return strings.TrimRight(out, "\n ")
}

// keys types text literally, as a person's keys.
func (tm *term) keys(text string) error {
	out, err := tm.run("send-keys", "-l", "--", text)
	if err != nil {
		return fmt.Errorf("tmux send-keys: %v: %s", err, out)
	}
	return nil
}

// key presses a named key (Enter, Escape).
func (tm *term) key(name string) error {
	out, err := tm.run("send-keys", name)
	if err != nil {
		return fmt.Errorf("tmux send-keys %s: %v: %s", name, err, out)
	}
	return nil
}
