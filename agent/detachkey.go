package agent

import (
	"bytes"
	"strconv"
)

// Ctrl-\ as terminals send it when a program asked for more than legacy
// keys: the kitty keyboard protocol ("CSI 92;5u") and xterm's
// modifyOtherKeys ("CSI 27;5;92~"). A pane program's request for either
// reaches the person's terminal through attach, which then encodes the
// detach key so.
const (
	backslashCode = 92 // '\\', the key's code
	ctrlModifier  = 4  // the Ctrl bit of a modifier parameter (value - 1)
	lockModifiers = 64 | 128
)

// detachIndex returns where the detach key starts in b, or -1: the byte
// DetachKey, or Ctrl-\ encoded by the kitty keyboard protocol or by
// xterm's modifyOtherKeys (caps and num lock allowed, no other modifier).
func detachIndex(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == DetachKey:
			return i
		case b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' && csiDetach(b[i+2:]):
			return i
		}
	}
	return -1
}

// csiDetach reports whether the CSI sequence whose parameters start b is
// Ctrl-\ ("92;5u", "92;5:1u", "27;5;92~").
func csiDetach(b []byte) bool {
	end := bytes.IndexFunc(b, func(r rune) bool { return r < '0' || r > ';' })
	if end < 0 {
		return false
	}
	params := bytes.Split(b[:end], []byte(";"))
	// field is the first sub-parameter of parameter i (kitty adds
	// ":shifted:base" and ":event" after the values hm needs).
	field := func(i int) int {
		if i >= len(params) {
			return -1
		}
		v, _, _ := bytes.Cut(params[i], []byte(":"))
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return -1
		}
		return n
	}
	ctrlOnly := func(m int) bool { return m > 0 && (m-1)&^lockModifiers == ctrlModifier }
	switch b[end] {
	case 'u':
		return field(0) == backslashCode && ctrlOnly(field(1)) && len(params) <= 3
	case '~':
		return len(params) == 3 && field(0) == 27 && ctrlOnly(field(1)) && field(2) == backslashCode
	}
	return false
}
