package e2e

import (
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// TestTourShowsMessages is the README's tour as a person meets it (issue
// #34 item 1): the hub started as make run starts it, hm-send to architect,
// then hm attach architect in a terminal: the message's text is on the
// pane's screen, not only a pointer to a file. Attach keeps its banner (in
// the window title) and leaves the cursor at column 0 on detach.
func TestTourShowsMessages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--demo")
	defer h.stop()
	const text = "(BUILDER #1): tests pass"
	if r := run(t, root, nil, "hm-send", "architect", text); r.code != 0 {
		t.Fatalf("hm-send: %+v", r)
	}
	bin, env := hmBinary(t, "hm")
	cmd := exec.Command(bin, "attach", "architect")
	cmd.Env = cleanEnv(root, env...)
	cmd.Dir = root
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("hm attach in a terminal: %v", err)
	}
	defer tty.Close()
	var out testutil.SyncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, tty)
	}()
	poll.For(t, 60*time.Second, func() error {
		screen := ansi.Strip(out.String())
		return poll.Want(strings.Contains(screen, text) && strings.Contains(screen, "architect> "),
			"the attached pane shows the prompt and %q; it shows:\n%s", text, screen)
	})
	if _, err := tty.Write([]byte{0x1c}); err != nil { // Ctrl-\ detaches
		t.Fatalf("detach: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("hm attach after Ctrl-\\: %v\n%s", err, ansi.Strip(out.String()))
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Errorf("hm attach did not detach on Ctrl-\\:\n%s", ansi.Strip(out.String()))
	}
	tty.Close()
	<-copied
	// The banner survives the pane's screen in the window title, and the
	// detach line ends at column 0 for the shell's prompt (issue #34 item 11).
	raw := out.String()
	for _, want := range []string{"\x1b[22;0t\x1b]2;hm: attached to architect (Ctrl-\\ detaches)\x07", "hm: detached\r\n\x1b[23;0t"} {
		if !strings.Contains(raw, want) {
			t.Errorf("hm attach's output lacks %q:\n%q", want, raw)
		}
	}
}
