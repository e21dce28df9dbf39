package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestPaneScreen: the pane's virtual terminal shows what the program drew.
func TestPaneScreen(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t)
	p := startPane(t, spec)
	poll.For(t, 10*time.Second, func() error {
		s := p.Screen()
		switch {
		case !strings.HasPrefix(s.Lines[0], "fakeagent ready"):
			return fmt.Errorf("row 0 = %q", s.Lines[0])
		case s.Lines[1] != ">":
			return fmt.Errorf("row 1 = %q", s.Lines[1])
		case s.CursorRow != 1 || s.CursorCol != 2:
			return fmt.Errorf("cursor %d,%d", s.CursorRow, s.CursorCol)
		case !s.BracketedPaste || s.AltScreen || !s.CursorVisible:
			return fmt.Errorf("modes: %+v", s)
		case s.Cols != DefaultCols || s.Rows != DefaultRows:
			return fmt.Errorf("size %dx%d", s.Cols, s.Rows)
		}
		return nil
	})
	if !p.Status().BracketedPaste {
		t.Error("Status.BracketedPaste is false")
	}
	if err := p.Resize(60, 10); err != nil {
		t.Fatal(err)
	}
	if s := p.Screen(); s.Cols != 60 || s.Rows != 10 || !strings.HasPrefix(s.Lines[0], "fakeagent ready") {
		t.Errorf("after resize: %dx%d %q", s.Cols, s.Rows, s.Text())
	}
}

// TestPaneBadOutput: garbage, truncated escapes, a huge title and a reset
// mid-stream neither stop the pane's reader nor break its screen.
func TestPaneBadOutput(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t)
	spec.Command = `head -c 10485760 /dev/urandom; printf '\033]0;%s\007' "$(head -c 2000000 /dev/zero | tr '\0' T)"; printf '\033[12;\033[?20'; printf '\033c'; echo survived; printf '\033]2;short\007'; exec sleep 60`
	spec.LogPath = ""
	p := startPane(t, spec)
	poll.For(t, 60*time.Second, func() error {
		s := p.Screen()
		if !strings.Contains(s.Text(), "survived") || s.Title != "short" {
			return fmt.Errorf("screen %q title %.20q", s.Text(), s.Title)
		}
		return nil
	})
	if st := p.Status(); st.State == StateExited {
		t.Errorf("pane state %s: %s", st.State, st.LastError)
	}
}
