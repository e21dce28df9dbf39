package agent

import (
	"bytes"
	"strings"
)

// scanner states.
const (
	stGround   = iota
	stEsc      // after ESC
	stEscInter // ESC followed by intermediate bytes (e.g. "ESC ( B")
	stCSI      // control sequence introducer seen
	stString   // OSC, DCS, SOS, PM or APC string body
	stStrEsc   // ESC inside a string (possible ST)
)

// maxLineBytes bounds a line: a longer one is emitted in pieces.
const maxLineBytes = 16 * 1024

// termScanner splits a program's output stream into ANSI-stripped lines
// (for Spec.OnLine and exit reasons), also when sequences are split across
// reads. The screen itself and the terminal modes are the pane's vterm's
// business. It is not safe for concurrent use.
type termScanner struct {
	state     int
	oscString bool // the string ends at BEL too (OSC)

	emit   func(line string) // nil: no line splitting
	line   []byte
	lastCR bool // the last line ended at a lone CR: a following LF is not another line
}

// Write feeds output bytes; it never fails. Without emit it does nothing:
// lines are all it is for. Runs of bytes that step would only append or
// pass over go at once (run); the others one by one (step).
func (s *termScanner) Write(p []byte) (int, error) {
	if s.emit == nil {
		return len(p), nil
	}
	for i := 0; i < len(p); {
		if n := s.run(p[i:]); n > 0 {
			i += n
			continue
		}
		s.step(p[i])
		i++
	}
	return len(p), nil
}

// run consumes the longest prefix of p that leaves the state as it is:
// printable text on the ground (appended to the line), a control
// sequence's parameter and intermediate bytes, a string's body. It returns
// how many bytes it took; 0 when step must take the next one.
func (s *termScanner) run(p []byte) int {
	n := 0
	switch s.state {
	case stGround:
		for n < len(p) && p[n] >= 0x20 && p[n] != 0x7f {
			n++
		}
		s.text(p[:n])
	case stCSI:
		for n < len(p) && p[n] >= 0x20 && p[n] <= 0x3f {
			n++
		}
	case stString:
		for n < len(p) && !s.stringEnd(p[n]) {
			n++
		}
	}
	return n
}

// stringEnd reports whether c, inside a string, is one step must see:
// ESC (a possible ST), BEL ending an OSC, CAN or SUB cancelling it.
func (s *termScanner) stringEnd(c byte) bool {
	return c == 0x1b || c == 0x18 || c == 0x1a || c == 0x07 && s.oscString
}

// text appends printable bytes to the line, emitting it in pieces of
// maxLineBytes.
func (s *termScanner) text(b []byte) {
	if len(b) == 0 {
		return
	}
	s.lastCR = false
	if s.emit == nil {
		return
	}
	for len(b) > 0 {
		k := min(len(b), maxLineBytes-len(s.line))
		s.line = append(s.line, b[:k]...)
		b = b[k:]
		if len(s.line) >= maxLineBytes {
			s.endLine(false)
		}
	}
}

// step consumes one byte.
func (s *termScanner) step(c byte) {
	switch s.state {
	case stGround:
		s.ground(c)
	case stEsc:
		switch {
		case c == '[':
			s.state = stCSI
		case c == ']':
			s.state, s.oscString = stString, true
		case c == 'P' || c == 'X' || c == '^' || c == '_':
			s.state, s.oscString = stString, false
		case c == 'E': // NEL
			s.endLine(false)
			s.state = stGround
		case c >= 0x20 && c <= 0x2f:
			s.state = stEscInter
		case c == 0x1b:
			// ESC ESC: stay.
		case c == 0x18 || c == 0x1a:
			s.state = stGround
		case c < 0x20:
			s.control(c)
		default:
			s.state = stGround
		}
	case stEscInter:
		switch {
		case c >= 0x30 && c <= 0x7e:
			s.state = stGround
		case c == 0x1b:
			s.state = stEsc
		case c == 0x18 || c == 0x1a:
			s.state = stGround
		}
	case stCSI:
		switch {
		case c >= 0x20 && c <= 0x3f:
			// parameter or intermediate byte
		case c >= 0x40 && c <= 0x7e:
			s.finishCSI(c)
			s.state = stGround
		case c == 0x1b:
			s.state = stEsc
		case c == 0x18 || c == 0x1a:
			s.state = stGround
		case c < 0x20:
			s.control(c)
		default:
			s.state = stGround
		}
	case stString:
		switch {
		case c == 0x1b:
			s.state = stStrEsc
		case c == 0x07 && s.oscString:
			s.state = stGround
		case c == 0x18 || c == 0x1a:
			s.state = stGround
		}
	case stStrEsc:
		switch c {
		case '\\', 0x18, 0x1a:
			s.state = stGround
		case 0x1b:
		default:
			s.state = stString
		}
	}
}

// ground handles a byte outside any escape sequence.
func (s *termScanner) ground(c byte) {
	switch {
	case c == 0x1b:
		s.state = stEsc
	case c < 0x20 || c == 0x7f:
		s.control(c)
	default:
		s.text([]byte{c})
	}
}

// control executes a C0 control byte.
func (s *termScanner) control(c byte) {
	switch c {
	case '\n', '\v', '\f':
		if s.lastCR && c == '\n' {
			s.lastCR = false
			return
		}
		s.endLine(false)
	case '\r':
		s.endLine(true)
	case '\t':
		s.lastCR = false
		if s.emit != nil {
			s.line = append(s.line, '\t')
		}
	}
}

// finishCSI acts on a complete control sequence with final byte f.
func (s *termScanner) finishCSI(f byte) {
	switch f {
	case 'B', 'E', 'F', 'H', 'f', 'd', 'J':
		// Cursor moved to another row (or the screen was cleared): text
		// on either side does not belong to one line.
		if len(s.line) > 0 {
			s.endLine(false)
		}
	}
}

// endLine emits the current line. cr marks a line ended by a lone CR.
func (s *termScanner) endLine(cr bool) {
	if s.emit != nil {
		s.emit(strings.ToValidUTF8(string(bytes.TrimRight(s.line, " \t")), "\uFFFD"))
	}
	s.line = s.line[:0]
	s.lastCR = cr
}
