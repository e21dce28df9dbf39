// Package vterm is the virtual terminal behind every hm pane: it follows a
// program's output the way a terminal does and keeps what a person would see
// on the screen (text, cursor, alternate screen, modes, title), and it
// composes the replies a terminal gives to queries (cursor position, device
// attributes, colours, keyboard protocol, version, mode reports, settings
// and capabilities).
//
// Escape sequences are decoded by github.com/charmbracelet/x/ansi's parser
// (a maintained DEC/ECMA-48 state machine); this package keeps the screen.
// It keeps text only, not colours or attributes: hm needs the screen to judge
// readiness and to redraw a viewer's terminal, not to paint it. A scroll
// rotates line slices, so its cost does not grow with the screen's width.
//
// A Terminal never panics on any input and never blocks: replies are queued
// (bounded) for the caller to take with Replies.
package vterm

// The Terminal's state: creation, replies, size, resize, resets and the
// accessors of cursor, modes and title.

import (
	"github.com/charmbracelet/x/ansi"
)

// Limits that keep a hostile program from growing the terminal's memory.
const (
	// MaxTitle is the longest title kept, in bytes.
	MaxTitle = 1024
	// maxData bounds the payload of one OSC/DCS/APC string.
	maxData = 4096
	// maxReplies bounds the replies waiting to be taken.
	maxReplies = 4096
	// maxDim bounds the screen size.
	maxDim = 1000
)

// wideTail marks the cell to the right of a double-width rune.
const wideTail rune = -1

// Version is the terminal's name in XTVERSION replies.
const Version = "hm-vterm(1)"

// Mode flags.
const (
	modeBracketedPaste = 1 << iota
	modeAppCursor
	modeHideCursor
	modeNoAutowrap
	modeOrigin
	modeInsert
	modeAppKeypad
)

type cursor struct {
	x, y     int
	wrapNext bool // the last column was written: the next rune wraps first
	origin   bool
}

type screen struct {
	lines [][]rune // rows x cols; ' ' blank, wideTail after a wide rune
	saved cursor
}

// Terminal is a virtual terminal. It is not safe for concurrent use.
type Terminal struct {
	p          *ansi.Parser
	cols, rows int
	scr        [2]screen
	alt        bool
	cur        cursor
	top, bot   int // scroll region, inclusive rows
	modes      int
	kitty      []int // kitty keyboard flags stack
	title      string
	replies    []byte
	lastRune   rune
	in         byte // the byte being parsed: what ended an OSC string
}

// New returns a terminal of cols x rows (each clamped to 1..1000).
func New(cols, rows int) *Terminal {
	t := &Terminal{p: ansi.NewParser()}
	t.p.SetParamsSize(32)
	t.p.SetDataSize(maxData)
	t.p.SetHandler(ansi.Handler{
		Print:     t.print,
		Execute:   t.execute,
		HandleCsi: t.csi,
		HandleEsc: t.esc,
		HandleOsc: t.osc,
		HandleDcs: t.dcs,
	})
	t.cols, t.rows = clampDim(cols), clampDim(rows)
	t.scr[0].lines = newLines(t.cols, t.rows)
	t.scr[1].lines = newLines(t.cols, t.rows)
	t.bot = t.rows - 1
	return t
}

func clampDim(n int) int { return min(max(n, 1), maxDim) }

func newLines(cols, rows int) [][]rune {
	lines := make([][]rune, rows)
	for i := range lines {
		lines[i] = blank(cols)
	}
	return lines
}

func blank(cols int) []rune {
	l := make([]rune, cols)
	for i := range l {
		l[i] = ' '
	}
	return l
}

// Write feeds program output. It never fails and never panics.
func (t *Terminal) Write(b []byte) (int, error) {
	for _, c := range b {
		t.in = c
		t.p.Advance(c)
	}
	return len(b), nil
}

// Replies returns and clears the replies to the queries seen so far, as a
// terminal would type them back to the program.
func (t *Terminal) Replies() []byte {
	r := t.replies
	t.replies = nil
	return r
}

func (t *Terminal) reply(s string) {
	if len(t.replies)+len(s) <= maxReplies {
		t.replies = append(t.replies, s...)
	}
}

func (t *Terminal) lines() [][]rune { return t.scr[t.idx()].lines }

func (t *Terminal) idx() int {
	if t.alt {
		return 1
	}
	return 0
}

// Size returns the screen size.
func (t *Terminal) Size() (cols, rows int) { return t.cols, t.rows }

// Cursor returns the cursor position, 0-based.
func (t *Terminal) Cursor() (row, col int) { return t.cur.y, t.cur.x }

// AltScreen reports whether the alternate screen is shown.
func (t *Terminal) AltScreen() bool { return t.alt }

// BracketedPaste reports whether the program switched bracketed paste on.
func (t *Terminal) BracketedPaste() bool { return t.modes&modeBracketedPaste != 0 }

// AppCursor reports whether cursor keys are in application mode (DECCKM).
func (t *Terminal) AppCursor() bool { return t.modes&modeAppCursor != 0 }

// CursorVisible reports whether the cursor is shown.
func (t *Terminal) CursorVisible() bool { return t.modes&modeHideCursor == 0 }

// Title returns the window title last set (OSC 0 or 2).
func (t *Terminal) Title() string { return t.title }

// Resize changes the screen size, keeping the text at the top left and the
// cursor's row on the screen.
func (t *Terminal) Resize(cols, rows int) {
	cols, rows = clampDim(cols), clampDim(rows)
	if cols == t.cols && rows == t.rows {
		return
	}
	shift := 0
	if t.cur.y >= rows {
		shift = t.cur.y - rows + 1
	}
	for i := range t.scr {
		old := t.scr[i].lines
		s := 0
		if i == t.idx() {
			s = shift
		}
		nl := newLines(cols, rows)
		for y := range rows {
			if y+s < len(old) {
				copy(nl[y], old[y+s])
				fixWideEdge(nl[y])
			}
		}
		t.scr[i].lines = nl
		t.scr[i].saved.x = min(t.scr[i].saved.x, cols-1)
		t.scr[i].saved.y = min(t.scr[i].saved.y, rows-1)
	}
	t.cols, t.rows = cols, rows
	t.cur.y -= shift
	t.cur.x = min(t.cur.x, cols-1)
	t.cur.wrapNext = false
	t.top, t.bot = 0, rows-1
}

// fixWideEdge blanks a wide rune cut in half at the right edge.
func fixWideEdge(l []rune) {
	if n := len(l); n > 0 && runeWidth(l[n-1]) == 2 {
		l[n-1] = ' '
	}
}

// Reset is a full reset (RIS): blank screens, modes off, cursor home.
func (t *Terminal) Reset() {
	cols, rows := t.cols, t.rows
	title := t.title
	*t = Terminal{p: t.p, cols: cols, rows: rows, title: title, replies: t.replies}
	t.scr[0].lines = newLines(cols, rows)
	t.scr[1].lines = newLines(cols, rows)
	t.bot = rows - 1
}

// SoftReset switches the modes a new program must set itself off (paste,
// cursor keys, keypad, hidden cursor, alternate screen, scroll region),
// keeping the text; hm calls it when a pane's program is started again.
func (t *Terminal) SoftReset() {
	t.modes = 0
	t.kitty = nil
	if t.alt {
		t.alt = false
	}
	t.top, t.bot = 0, t.rows-1
	t.cur.wrapNext = false
	t.cur.origin = false
}
