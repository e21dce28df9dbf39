package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/agent/internal/vterm"
	"hm/internal/ground/poll"
)

// drawScript draws a full 120x40 screen: every row numbered and wider than
// 80 columns, the cursor after a prompt on row 38, bracketed paste on.
const drawScript = `i=1; while [ $i -le 40 ]; do printf '\033[%d;1Hrow %02d %s|end' $i $i 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done; printf '\033[38;1H\033[2K> typed\033[?2004h'; exec sleep 300`

// TestAttachRendersScreen: viewers at 80x24 and 200x60 attached to a
// 120x40 pane first get the pane's screen drawn for their own size (not a
// replay of raw bytes laid out for 120 columns), then live output.
func TestAttachRendersScreen(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: drawScript})
	poll.For(t, 10*time.Second, func() error {
		s := p.Screen()
		return poll.Want(s.Lines[37] == "> typed" && strings.HasPrefix(s.Lines[39], "row 40"), "screen drawn: %q", s.Text())
	})
	pane := p.Screen()
	base := attachServer(t, map[string]*Pane{"builder": p})
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		cols, rows := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", cols, rows), func(t *testing.T) {
			c := attachSized(t, base+"builder", true, cols, rows)
			viewer := vterm.New(cols, rows)
			poll.For(t, 10*time.Second, func() error {
				viewer = vterm.New(cols, rows)
				viewer.Write([]byte(c.out.String()))
				return poll.Want(strings.Contains(viewer.String(), "> typed"), "viewer screen: %q", viewer.String())
			})
			start := max(0, pane.Rows-rows) // the last rows, where the cursor is
			for y := range min(rows, pane.Rows) {
				want := pane.Lines[start+y]
				if len(want) > cols {
					want = strings.TrimRight(want[:cols], " ")
				}
				if got := viewer.Line(y); got != want {
					t.Errorf("viewer row %d = %q, want pane row %d %q", y, got, start+y, want)
				}
			}
			for y := pane.Rows; y < rows; y++ {
				if got := viewer.Line(y); got != "" {
					t.Errorf("viewer row %d = %q, want blank", y, got)
				}
			}
			if r, col := viewer.Cursor(); r != pane.CursorRow-start || col != pane.CursorCol {
				t.Errorf("viewer cursor %d,%d, want %d,%d", r, col, pane.CursorRow-start, pane.CursorCol)
			}
			if !viewer.BracketedPaste() {
				t.Error("viewer's terminal did not get the pane's bracketed paste mode")
			}
			if s := p.Screen(); s.Cols != 120 || s.Rows != 40 {
				t.Errorf("a view-only viewer resized the pane to %dx%d", s.Cols, s.Rows)
			}
		})
	}
}

// TestAttachLiveAfterScreen: bytes after the rendered screen are the
// program's live output, with no gap.
func TestAttachLiveAfterScreen(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t, "FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0")
	p := startPane(t, spec)
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(p.Screen().Text(), "fakeagent ready"), "banner") })
	base := attachServer(t, map[string]*Pane{"builder": p})
	c := attachSized(t, base+"builder", false, 100, 30)
	c.waitOutput(t, "fakeagent ready")
	if _, err := c.in.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	c.waitOutput(t, "received 5 bytes: hello")
	viewer := vterm.New(100, 30)
	viewer.Write([]byte(c.out.String()))
	if s := viewer.String(); !strings.Contains(s, "fakeagent ready") || !strings.Contains(s, "received 5 bytes: hello") {
		t.Errorf("viewer screen:\n%s", s)
	}
	if s := p.Screen(); s.Cols != 100 || s.Rows != 30 {
		t.Errorf("an interactive viewer's size was not applied: %dx%d", s.Cols, s.Rows)
	}
}

// TestAttachDetachRestoresTerminal: detaching from a full-screen program
// leaves the person's terminal on the main screen with the cursor shown
// and modes and attributes reset.
func TestAttachDetachRestoresTerminal(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: `printf '\033[?1049h\033[?25l\033[?2004h\033[?1h\033[7m\033[20;1H> box'; exec sleep 300`})
	poll.For(t, 10*time.Second, func() error { return poll.Want(p.Screen().AltScreen, "alt screen") })
	base := attachServer(t, map[string]*Pane{"builder": p})
	c := attachSized(t, base+"builder", false, 80, 24)
	c.waitOutput(t, "> box")
	viewer := vterm.New(80, 24)
	viewer.Write([]byte(c.out.String()))
	if !viewer.AltScreen() || viewer.CursorVisible() || !viewer.AppCursor() {
		t.Fatalf("viewer did not get the pane's modes: alt=%v cursor=%v appCursor=%v", viewer.AltScreen(), viewer.CursorVisible(), viewer.AppCursor())
	}
	if _, err := c.in.Write([]byte{DetachKey}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("AttachClient: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("detach did not end the session")
	}
	out := c.out.String()
	if !strings.HasSuffix(out, RestoreTerminal) {
		t.Fatalf("output does not end with the restore sequence: %q", out[max(0, len(out)-120):])
	}
	viewer.Write([]byte(out[len(c.out.String())-len(RestoreTerminal):]))
	if viewer.AltScreen() || !viewer.CursorVisible() || viewer.BracketedPaste() || viewer.AppCursor() {
		t.Errorf("after detach: alt=%v cursor=%v paste=%v appCursor=%v", viewer.AltScreen(), viewer.CursorVisible(), viewer.BracketedPaste(), viewer.AppCursor())
	}
}

// attachSized is attach for a viewer whose terminal is cols x rows.
func attachSized(t *testing.T, url string, view bool, cols, rows int) *client {
	t.Helper()
	return attachWith(t, url, "secret", view, [2]uint16{uint16(cols), uint16(rows)})
}
