package vterm

// Modes and queries: DEC private modes, the alternate screen, mode reports
// (DECRQM), the kitty keyboard flags, OSC (title, colour queries) and the
// DCS queries (DECRQSS, XTGETTCAP).

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

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

// reportANSIMode answers DECRQM for an ANSI (non-private) mode: insert
// mode is kept, line feed/new line mode is always reset, the rest is not
// recognised.
func (t *Terminal) reportANSIMode(p ansi.Params) {
	v, _, _ := p.Param(0, 0)
	state := 0 // not recognised
	switch v {
	case 4: // IRM
		state = 2
		if t.modes&modeInsert != 0 {
			state = 1
		}
	case 20: // LNM
		state = 2
	}
	t.reply(fmt.Sprintf("\x1b[%d;%d$y", v, state))
}

// dcs answers the device control strings that ask the terminal something,
// as xterm does: DECRQSS (a setting: the graphic rendition, which this
// terminal does not keep and reports as the default, and the scroll
// region; any other is reported invalid) and XTGETTCAP (every capability
// name is reported unknown, so the program uses its defaults).
func (t *Terminal) dcs(cmd ansi.Cmd, _ ansi.Params, data []byte) {
	if cmd.Prefix() != 0 || cmd.Final() != 'q' {
		return
	}
	switch cmd.Intermediate() {
	case '$': // DECRQSS
		switch string(data) {
		case "m":
			t.reply("\x1bP1$r0m\x1b\\")
		case "r":
			t.reply(fmt.Sprintf("\x1bP1$r%d;%dr\x1b\\", t.top+1, t.bot+1))
		default:
			t.reply("\x1bP0$r\x1b\\")
		}
	case '+': // XTGETTCAP
		name, _, _ := strings.Cut(string(data), ";")
		if !isHex(name) {
			name = ""
		}
		t.reply("\x1bP0+r" + name + "\x1b\\")
	}
}

// isHex reports whether s is hex digits only (a capability name as
// XTGETTCAP sends it).
func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
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
		// Answered with the terminator the query ended with (BEL or ST),
		// as xterm does: a program may wait for the one it sent.
		end := "\x1b\\"
		if t.in == 0x07 {
			end = "\x07"
		}
		t.reply(fmt.Sprintf("\x1b]%d;%s%s", cmd, rgb, end))
	}
}
