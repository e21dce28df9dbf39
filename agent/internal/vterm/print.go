package vterm

// Printing and the cursor's motion: rune widths, putting runes on the screen,
// C0 controls (backspace, tab, line feed), index and scrolling of the region.

import (
	"sync"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

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
