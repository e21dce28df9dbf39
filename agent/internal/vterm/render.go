package vterm

import (
	"strconv"
	"strings"
)

// Render returns bytes that redraw the screen on a terminal of cols x rows
// (a viewer that attaches): it switches to the alternate screen when the
// program uses it, clears, writes the text row by row at absolute
// positions (rows cut at the viewer's width, so nothing wraps), places the
// cursor and sets the modes that change what the keyboard sends (cursor
// keys, keypad, bracketed paste) and the cursor's visibility. A viewer with
// fewer rows sees the rows around the cursor and the last text.
func (t *Terminal) Render(cols, rows int) []byte {
	cols, rows = clampDim(cols), clampDim(rows)
	var b strings.Builder
	if t.alt {
		b.WriteString("\x1b[?1049h")
	}
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	ls := t.lines()
	last := t.cur.y
	for y := len(ls) - 1; y > last; y-- {
		if lineText(ls[y]) != "" {
			last = y
			break
		}
	}
	start := max(0, last-rows+1)
	if t.cur.y < start {
		start = t.cur.y
	}
	end := min(len(ls), start+rows)
	for y := start; y < end; y++ {
		text := cut(ls[y], cols)
		if text == "" {
			continue
		}
		b.WriteString("\x1b[")
		b.WriteString(strconv.Itoa(y - start + 1))
		b.WriteString(";1H")
		b.WriteString(text)
	}
	b.WriteString("\x1b[")
	b.WriteString(strconv.Itoa(t.cur.y - start + 1))
	b.WriteByte(';')
	b.WriteString(strconv.Itoa(min(t.cur.x, cols-1) + 1))
	b.WriteByte('H')
	if t.modes&modeAppCursor != 0 {
		b.WriteString("\x1b[?1h")
	}
	if t.modes&modeAppKeypad != 0 {
		b.WriteString("\x1b=")
	}
	if t.modes&modeBracketedPaste != 0 {
		b.WriteString("\x1b[?2004h")
	}
	if t.modes&modeHideCursor != 0 {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// cut returns a row's text limited to cols cells, trailing blanks dropped.
func cut(l []rune, cols int) string {
	if len(l) > cols {
		l = l[:cols]
		if n := len(l); n > 0 && runeWidth(l[n-1]) == 2 {
			l = l[:n-1]
		}
	}
	return lineText(l)
}
