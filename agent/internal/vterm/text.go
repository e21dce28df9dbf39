package vterm

// Screen text: the rows as strings, without trailing blanks.

import (
	"strings"
)

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
