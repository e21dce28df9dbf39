// Package vterm is the virtual terminal behind every hm pane: it follows a
// program's output the way a terminal does and keeps what a person would see
// on the screen (text, cursor, alternate screen, modes, title), and it
// composes the replies a terminal gives to queries (cursor position, device
// attributes, colours, keyboard protocol, version).
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

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
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

// Line returns row y's text without trailing blanks.
func (t *Terminal) Line(y int) string {
	if y < 0 || y >= t.rows {
		return ""
	}
	return lineText(t.lines()[y])
}

// Lines returns every row's text without trailing blanks.
func (t *Terminal) Lines() []string {
	out := make([]string, t.rows)
	for y, l := range t.lines() {
		out[y] = lineText(l)
	}
	return out
}

// String returns the screen's text, rows joined by newlines, trailing empty
// rows dropped.
func (t *Terminal) String() string {
	ls := t.Lines()
	for len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return strings.Join(ls, "\n")
}

func lineText(l []rune) string {
	end := len(l)
	for end > 0 && (l[end-1] == ' ' || l[end-1] == wideTail) {
		end--
	}
	var b strings.Builder
	b.Grow(end)
	for _, r := range l[:end] {
		if r != wideTail {
			b.WriteRune(r)
		}
	}
	return b.String()
}

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

func runeWidth(r rune) int {
	if r < 0x300 {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return 0
		}
		return 1
	}
	if r < 0x10000 {
		bmpOnce.Do(fillBMP)
		return int(bmpWidth[r])
	}
	return runewidth.RuneWidth(r)
}

// bmpWidth caches the width of every rune in the Basic Multilingual Plane
// (box drawing, CJK, spinners): looking it up is the hot path of print.
var (
	bmpOnce  sync.Once
	bmpWidth [0x10000]uint8
)

func fillBMP() {
	for r := range rune(0x10000) {
		bmpWidth[r] = uint8(runewidth.RuneWidth(r))
	}
}

// print puts one rune at the cursor.
func (t *Terminal) print(r rune) {
	if r == utf8.RuneError || r < 0 {
		r = '\uFFFD'
	}
	w := runeWidth(r)
	if w == 0 {
		return // combining marks and zero-width runes are not kept
	}
	if w > 2 {
		w = 1
	}
	if w == 2 && t.cols < 2 {
		r, w = '\uFFFD', 1
	}
	if t.cur.wrapNext {
		t.cur.wrapNext = false
		if t.modes&modeNoAutowrap == 0 {
			t.cur.x = 0
			t.index()
		}
	}
	if t.cur.x+w > t.cols {
		if t.modes&modeNoAutowrap != 0 {
			t.cur.x = t.cols - w
		} else {
			t.cur.x = 0
			t.index()
		}
	}
	l := t.lines()[t.cur.y]
	if t.modes&modeInsert != 0 {
		t.insertBlanks(w)
	}
	t.clearWideAt(l, t.cur.x)
	if w == 2 {
		t.clearWideAt(l, t.cur.x+1)
		l[t.cur.x], l[t.cur.x+1] = r, wideTail
	} else {
		l[t.cur.x] = r
	}
	t.lastRune = r
	if t.cur.x+w >= t.cols {
		t.cur.x = t.cols - 1
		t.cur.wrapNext = true
	} else {
		t.cur.x += w
	}
}

// clearWideAt blanks the other half of a wide rune that x belongs to.
func (t *Terminal) clearWideAt(l []rune, x int) {
	if x < 0 || x >= len(l) {
		return
	}
	if l[x] == wideTail && x > 0 {
		l[x-1] = ' '
	}
	if x+1 < len(l) && l[x+1] == wideTail {
		l[x+1] = ' '
	}
}

func (t *Terminal) execute(b byte) {
	switch b {
	case '\b':
		t.cur.wrapNext = false
		if t.cur.x > 0 {
			t.cur.x--
		}
	case '\t':
		t.cur.wrapNext = false
		t.cur.x = min((t.cur.x/8+1)*8, t.cols-1)
	case '\n', '\v', '\f':
		t.cur.wrapNext = false
		t.index()
	case '\r':
		t.cur.wrapNext = false
		t.cur.x = 0
	}
}

// index moves the cursor down, scrolling at the region's bottom.
func (t *Terminal) index() {
	switch {
	case t.cur.y == t.bot:
		t.scrollUp(t.top, t.bot, 1)
	case t.cur.y < t.rows-1:
		t.cur.y++
	}
}

// reverseIndex moves the cursor up, scrolling at the region's top.
func (t *Terminal) reverseIndex() {
	switch {
	case t.cur.y == t.top:
		t.scrollDown(t.top, t.bot, 1)
	case t.cur.y > 0:
		t.cur.y--
	}
}

// scrollUp moves rows top..bot up by n, blanking the rows that come in.
func (t *Terminal) scrollUp(top, bot, n int) {
	if top < 0 || bot >= t.rows || top > bot || n <= 0 {
		return
	}
	n = min(n, bot-top+1)
	ls := t.lines()
	region := ls[top : bot+1]
	out := make([][]rune, n)
	copy(out, region[:n])
	copy(region, region[n:])
	for i, l := range out {
		for j := range l {
			l[j] = ' '
		}
		region[len(region)-n+i] = l
	}
}

// scrollDown moves rows top..bot down by n, blanking the rows that come in.
func (t *Terminal) scrollDown(top, bot, n int) {
	if top < 0 || bot >= t.rows || top > bot || n <= 0 {
		return
	}
	n = min(n, bot-top+1)
	ls := t.lines()
	region := ls[top : bot+1]
	out := make([][]rune, n)
	copy(out, region[len(region)-n:])
	copy(region[n:], region[:len(region)-n])
	for i, l := range out {
		for j := range l {
			l[j] = ' '
		}
		region[i] = l
	}
}

func (t *Terminal) esc(cmd ansi.Cmd) {
	if cmd.Intermediate() != 0 {
		if cmd.Intermediate() == '#' && cmd.Final() == '8' { // DECALN
			for _, l := range t.lines() {
				for i := range l {
					l[i] = 'E'
				}
			}
		}
		return // charset designations and the like
	}
	switch cmd.Final() {
	case '7':
		t.saveCursor()
	case '8':
		t.restoreCursor()
	case 'D':
		t.cur.wrapNext = false
		t.index()
	case 'E':
		t.cur.wrapNext = false
		t.cur.x = 0
		t.index()
	case 'M':
		t.cur.wrapNext = false
		t.reverseIndex()
	case 'c':
		t.Reset()
	case '=':
		t.modes |= modeAppKeypad
	case '>':
		t.modes &^= modeAppKeypad
	}
}

func (t *Terminal) saveCursor() { t.scr[t.idx()].saved = t.cur }

func (t *Terminal) restoreCursor() {
	c := t.scr[t.idx()].saved
	c.x, c.y = min(max(c.x, 0), t.cols-1), min(max(c.y, 0), t.rows-1)
	t.cur = c
}

// param returns parameter i with default def; values below min become min
// and large values are capped.
func param(p ansi.Params, i, def, lo int) int {
	v, _, _ := p.Param(i, def)
	if v < lo {
		v = lo
	}
	return min(v, 1<<16)
}

func (t *Terminal) moveTo(y, x int) {
	if t.cur.origin {
		y += t.top
		t.cur.y = min(max(y, t.top), t.bot)
	} else {
		t.cur.y = min(max(y, 0), t.rows-1)
	}
	t.cur.x = min(max(x, 0), t.cols-1)
	t.cur.wrapNext = false
}

func (t *Terminal) csi(cmd ansi.Cmd, p ansi.Params) {
	prefix, inter, final := cmd.Prefix(), cmd.Intermediate(), cmd.Final()
	switch {
	case prefix == '?' && inter == 0 && (final == 'h' || final == 'l'):
		t.decMode(p, final == 'h')
		return
	case prefix == '?' && inter == '$' && final == 'p':
		t.reportMode(p)
		return
	case prefix == '?' && inter == 0 && final == 'u':
		t.reply(fmt.Sprintf("\x1b[?%du", t.kittyFlags()))
		return
	case prefix == '>' && inter == 0 && final == 'u':
		if len(t.kitty) < 16 {
			t.kitty = append(t.kitty, param(p, 0, 0, 0))
		}
		return
	case prefix == '<' && inter == 0 && final == 'u':
		n := param(p, 0, 1, 1)
		t.kitty = t.kitty[:max(0, len(t.kitty)-n)]
		return
	case prefix == '=' && inter == 0 && final == 'u':
		if len(t.kitty) > 0 {
			t.kitty[len(t.kitty)-1] = param(p, 0, 0, 0)
		}
		return
	case prefix == '>' && inter == 0 && final == 'c':
		t.reply("\x1b[>1;10;0c") // DA2: VT220, version 1.0
		return
	case prefix == '>' && inter == 0 && final == 'q':
		t.reply("\x1bP>|" + Version + "\x1b\\") // XTVERSION
		return
	case prefix == '?' && inter == 0 && final == 'n':
		if v, _, _ := p.Param(0, 0); v == 6 { // DECXCPR
			t.reply(fmt.Sprintf("\x1b[?%d;%d;1R", t.cur.y+1, t.cur.x+1))
		}
		return
	case prefix != 0 || inter != 0:
		if inter == '!' && final == 'p' { // DECSTR
			t.SoftReset()
		}
		return
	}
	switch final {
	case 'A':
		t.moveTo(t.cur.y-param(p, 0, 1, 1)-t.originTop(), t.cur.x)
	case 'B', 'e':
		t.moveTo(t.cur.y+param(p, 0, 1, 1)-t.originTop(), t.cur.x)
	case 'C', 'a':
		t.moveTo(t.cur.y-t.originTop(), t.cur.x+param(p, 0, 1, 1))
	case 'D':
		t.moveTo(t.cur.y-t.originTop(), t.cur.x-param(p, 0, 1, 1))
	case 'E':
		t.moveTo(t.cur.y+param(p, 0, 1, 1)-t.originTop(), 0)
	case 'F':
		t.moveTo(t.cur.y-param(p, 0, 1, 1)-t.originTop(), 0)
	case 'G', '`':
		t.moveTo(t.cur.y-t.originTop(), param(p, 0, 1, 1)-1)
	case 'H', 'f':
		t.moveTo(param(p, 0, 1, 1)-1, param(p, 1, 1, 1)-1)
	case 'd':
		t.moveTo(param(p, 0, 1, 1)-1, t.cur.x)
	case 'J':
		t.eraseDisplay(param(p, 0, 0, 0))
	case 'K':
		t.eraseLine(param(p, 0, 0, 0))
	case 'X':
		n := param(p, 0, 1, 1)
		l := t.lines()[t.cur.y]
		t.clearWideAt(l, t.cur.x)
		end := min(t.cur.x+n, t.cols)
		t.clearWideAt(l, end-1)
		for x := t.cur.x; x < end; x++ {
			l[x] = ' '
		}
		t.cur.wrapNext = false
	case '@':
		t.insertBlanks(param(p, 0, 1, 1))
	case 'P':
		t.deleteChars(param(p, 0, 1, 1))
	case 'L':
		if t.cur.y >= t.top && t.cur.y <= t.bot {
			t.scrollDown(t.cur.y, t.bot, param(p, 0, 1, 1))
			t.cur.x, t.cur.wrapNext = 0, false
		}
	case 'M':
		if t.cur.y >= t.top && t.cur.y <= t.bot {
			t.scrollUp(t.cur.y, t.bot, param(p, 0, 1, 1))
			t.cur.x, t.cur.wrapNext = 0, false
		}
	case 'S':
		t.scrollUp(t.top, t.bot, param(p, 0, 1, 1))
	case 'T':
		if len(p) <= 1 {
			t.scrollDown(t.top, t.bot, param(p, 0, 1, 1))
		}
	case 'b':
		if t.lastRune != 0 {
			for range min(param(p, 0, 1, 1), 2*t.cols) {
				t.print(t.lastRune)
			}
		}
	case 'r':
		top, bot := param(p, 0, 1, 1)-1, param(p, 1, t.rows, 1)-1
		bot = min(bot, t.rows-1)
		if top < bot {
			t.top, t.bot = top, bot
			t.moveTo(0, 0)
		}
	case 's':
		t.saveCursor()
	case 'u':
		t.restoreCursor()
	case 'h', 'l':
		for i := range p {
			if v := p[i].Param(0); v == 4 {
				t.setMode(modeInsert, final == 'h')
			}
		}
	case 'n':
		switch v, _, _ := p.Param(0, 0); v {
		case 5:
			t.reply("\x1b[0n")
		case 6:
			t.reply(fmt.Sprintf("\x1b[%d;%dR", t.cur.y+1, t.cur.x+1))
		}
	case 'c':
		if v, _, _ := p.Param(0, 0); v == 0 {
			t.reply("\x1b[?62;22c") // DA1: VT220 with ANSI colour
		}
	case 't':
		switch v, _, _ := p.Param(0, 0); v {
		case 18:
			t.reply(fmt.Sprintf("\x1b[8;%d;%dt", t.rows, t.cols))
		}
	}
}

func (t *Terminal) originTop() int {
	if t.cur.origin {
		return t.top
	}
	return 0
}

func (t *Terminal) kittyFlags() int {
	if len(t.kitty) == 0 {
		return 0
	}
	return t.kitty[len(t.kitty)-1]
}

func (t *Terminal) setMode(m int, on bool) {
	if on {
		t.modes |= m
	} else {
		t.modes &^= m
	}
}

func (t *Terminal) decMode(p ansi.Params, on bool) {
	for i := range p {
		switch p[i].Param(0) {
		case 1:
			t.setMode(modeAppCursor, on)
		case 6:
			t.cur.origin = on
			t.moveTo(0, 0)
		case 7:
			t.setMode(modeNoAutowrap, !on)
		case 25:
			t.setMode(modeHideCursor, !on)
		case 47, 1047:
			t.switchScreen(on, false)
		case 1048:
			if on {
				t.saveCursor()
			} else {
				t.restoreCursor()
			}
		case 1049:
			t.switchScreen(on, true)
		case 2004:
			t.setMode(modeBracketedPaste, on)
		}
	}
}

// switchScreen shows the alternate screen (cleared on entry) or the main one.
func (t *Terminal) switchScreen(alt, saveCursor bool) {
	if alt == t.alt {
		return
	}
	if alt {
		if saveCursor {
			t.scr[0].saved = t.cur
		}
		t.alt = true
		for _, l := range t.scr[1].lines {
			for i := range l {
				l[i] = ' '
			}
		}
		return
	}
	t.alt = false
	if saveCursor {
		t.restoreCursor()
	}
}

func (t *Terminal) reportMode(p ansi.Params) {
	v, _, _ := p.Param(0, 0)
	state := 0 // not recognised
	has := func(m int) int {
		if t.modes&m != 0 {
			return 1
		}
		return 2
	}
	switch v {
	case 1:
		state = has(modeAppCursor)
	case 25:
		state = 3 - has(modeHideCursor)
	case 1049, 1047, 47:
		state = 2
		if t.alt {
			state = 1
		}
	case 2004:
		state = has(modeBracketedPaste)
	case 2026, 2027:
		state = 2
	}
	t.reply(fmt.Sprintf("\x1b[?%d;%d$y", v, state))
}

func (t *Terminal) eraseDisplay(mode int) {
	ls := t.lines()
	switch mode {
	case 0:
		t.eraseLine(0)
		for _, l := range ls[t.cur.y+1:] {
			fill(l, 0, len(l))
		}
	case 1:
		t.eraseLine(1)
		for _, l := range ls[:t.cur.y] {
			fill(l, 0, len(l))
		}
	case 2, 3:
		for _, l := range ls {
			fill(l, 0, len(l))
		}
	}
	t.cur.wrapNext = false
}

func (t *Terminal) eraseLine(mode int) {
	l := t.lines()[t.cur.y]
	switch mode {
	case 0:
		t.clearWideAt(l, t.cur.x)
		fill(l, t.cur.x, len(l))
	case 1:
		t.clearWideAt(l, t.cur.x)
		fill(l, 0, t.cur.x+1)
	case 2:
		fill(l, 0, len(l))
	}
	t.cur.wrapNext = false
}

func fill(l []rune, from, to int) {
	for i := from; i < to && i < len(l); i++ {
		l[i] = ' '
	}
}

func (t *Terminal) insertBlanks(n int) {
	l := t.lines()[t.cur.y]
	x := t.cur.x
	n = min(n, t.cols-x)
	t.clearWideAt(l, x)
	copy(l[x+n:], l[x:])
	fill(l, x, x+n)
	fixWideEdge(l)
	t.cur.wrapNext = false
}

func (t *Terminal) deleteChars(n int) {
	l := t.lines()[t.cur.y]
	x := t.cur.x
	n = min(n, t.cols-x)
	t.clearWideAt(l, x)
	t.clearWideAt(l, x+n-1)
	copy(l[x:], l[x+n:])
	fill(l, t.cols-n, t.cols)
	if x < len(l) && l[x] == wideTail {
		l[x] = ' '
	}
	t.cur.wrapNext = false
}

func (t *Terminal) osc(cmd int, data []byte) {
	_, arg, _ := strings.Cut(string(data), ";")
	switch cmd {
	case 0, 2:
		title := strings.ToValidUTF8(arg, "\uFFFD")
		if len(title) > MaxTitle {
			title = title[:MaxTitle]
			title = strings.ToValidUTF8(title, "")
		}
		t.title = title
	case 10, 11, 12:
		if arg != "?" {
			return
		}
		// A dark terminal: light grey text on black, as most agent CLIs
		// expect when they pick their palette.
		rgb := "rgb:0000/0000/0000"
		if cmd != 11 {
			rgb = "rgb:d0d0/d0d0/d0d0"
		}
		t.reply(fmt.Sprintf("\x1b]%d;%s\x1b\\", cmd, rgb))
	}
}
