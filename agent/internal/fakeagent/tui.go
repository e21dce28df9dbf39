package main

import (
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// screen is the state of the full-screen TUI (FAKEAGENT_TUI=1).
type screen struct {
	rows, cols int
	history    []string // rows above the status row, oldest first
	status     string   // the row above the input box: the spinner while busy
	// diff (FAKEAGENT_TUI_DIFF=1): draw only the rows that changed since
	// last, the frame drawn before (nil: draw all of it, as after a resize).
	diff bool
	last []string
}

// maxHistory bounds the history kept for drawing.
const maxHistory = 200

// resize reads the terminal size (80x24 when unknown).
func (s *screen) resize() {
	s.last = nil
	s.cols, s.rows = 80, 24
	if c, r, err := term.GetSize(1); err == nil && c >= 20 && r >= 6 {
		s.cols, s.rows = c, r
	}
}

// add appends rows to the history.
func (s *screen) add(rows ...string) {
	s.history = append(s.history, rows...)
	if n := len(s.history) - maxHistory; n > 0 {
		s.history = append(s.history[:0], s.history[n:]...)
	}
}

// tuiStart enters the alternate screen and draws the first frame.
func (a *agent) tuiStart(paste bool) {
	a.tui.resize()
	a.tui.add(fmt.Sprintf("fakeagent ready (pid %d)", os.Getpid()))
	a.printf("\x1b[?1049h")
	if paste {
		a.printf("\x1b[?2004h")
	}
	a.draw()
}

// draw draws the frame in one write: history, status row, and the input
// box on the bottom three rows with the tail of the typed text (nothing
// when echo is off), and the cursor after it. It clears the screen and
// draws all of it, or with diff (as Ink-drawn CLIs do) only the rows that
// differ from the last frame, each row drawn where the program believes
// it stands: on a terminal whose screen is not the program's last frame,
// the rows it did not draw stay wrong.
func (a *agent) draw() {
	s := a.tui
	frame := make([]string, s.rows)
	histRows := s.rows - 4
	hist := s.history[max(0, len(s.history)-histRows):]
	copy(frame, hist)
	frame[s.rows-4] = s.status
	inner := s.cols - 3 // the box leaves the last column free
	frame[s.rows-3] = "╭" + strings.Repeat("─", inner) + "╮"
	typed := ""
	if a.echo {
		typed = inputTail(string(a.buf), inner-4)
	}
	w := runewidth.StringWidth(typed)
	frame[s.rows-2] = "│ > " + typed + strings.Repeat(" ", max(0, inner-3-w)) + "│"
	frame[s.rows-1] = "╰" + strings.Repeat("─", inner) + "╯"
	var b strings.Builder
	full := !s.diff || len(s.last) != len(frame)
	if full {
		b.WriteString("\x1b[H\x1b[2J")
	}
	for y, text := range frame {
		if !full && s.last[y] == text {
			continue
		}
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[2K%s", y+1, runewidth.Truncate(text, s.cols-1, ""))
	}
	s.last = frame
	fmt.Fprintf(&b, "\x1b[%d;%dH", s.rows-1, 5+w)
	a.printf("%s", b.String())
}

// inputTail is the end of the last line of the typed text that fits in
// width columns, controls shown as '?'.
func inputTail(buf string, width int) string {
	if i := strings.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	rs := []rune(strings.ToValidUTF8(buf, "?"))
	w, i := 0, len(rs)
	for i > 0 && w+runewidth.RuneWidth(rs[i-1]) <= width {
		i--
		w += runewidth.RuneWidth(rs[i])
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, string(rs[i:]))
}
