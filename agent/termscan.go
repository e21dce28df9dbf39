package agent

import "strings"

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

// Write feeds output bytes; it never fails.
func (s *termScanner) Write(p []byte) (int, error) {
	for _, c := range p {
		s.step(c)
	}
	return len(p), nil
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
		s.lastCR = false
		if s.emit != nil {
			s.line = append(s.line, c)
			if len(s.line) >= maxLineBytes {
				s.endLine(false)
			}
		}
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
		s.emit(strings.ToValidUTF8(strings.TrimRight(string(s.line), " \t"), "\uFFFD"))
	}
	s.line = s.line[:0]
	s.lastCR = cr
}
