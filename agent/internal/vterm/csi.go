package vterm

// Escape and CSI sequences: ESC dispatch, cursor save/restore and moves,
// the CSI dispatch (cursor, erase, insert/delete, scroll region, queries).

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"
)

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
	case prefix == 0 && inter == '$' && final == 'p':
		t.reportANSIMode(p)
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
