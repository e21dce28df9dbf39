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
}

// maxHistory bounds the history kept for drawing.
const maxHistory = 200

// resize reads the terminal size (80x24 when unknown).
func (s *screen) resize() {
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

// draw clears the screen and draws all of it, in one write: history,
// status row, and the input box on the bottom three rows with the tail of
// the typed text (nothing when echo is off) and the cursor after it.
func (a *agent) draw() {
	s := a.tui
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	row := func(y int, text string) {
		fmt.Fprintf(&b, "\x1b[%d;1H%s", y, runewidth.Truncate(text, s.cols-1, ""))
	}
	histRows := s.rows - 4
	hist := s.history[max(0, len(s.history)-histRows):]
	for i, h := range hist {
		row(i+1, h)
	}
	row(s.rows-3, s.status)
	inner := s.cols - 3 // the box leaves the last column free
	row(s.rows-2, "╭"+strings.Repeat("─", inner)+"╮")
	typed := ""
	if a.echo {
		typed = inputTail(string(a.buf), inner-4)
	}
	w := runewidth.StringWidth(typed)
	row(s.rows-1, "│ > "+typed+strings.Repeat(" ", max(0, inner-3-w))+"│")
	row(s.rows, "╰"+strings.Repeat("─", inner)+"╯")
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
