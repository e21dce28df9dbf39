package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Neutralize makes message text safe to type into a terminal program. It
// keeps printable text, newlines and tabs; it turns CR LF and lone CR into
// LF (a CR would act as Enter); it replaces ESC and the other C0 controls
// and DEL with their visible Unicode "control pictures" (ESC becomes "␛"),
// and C1 controls and invalid UTF-8 with U+FFFD. The result therefore never
// contains an escape sequence, so in particular no bracketed-paste marker can
// be forwarded to the pane.
func Neutralize(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				break // the LF that follows is kept
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r) // control pictures: U+2400..U+241F
		case r == 0x7f:
			b.WriteRune(0x2421) // ␡
		case r >= 0x80 && r <= 0x9f:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isClean reports whether s needs no change by Neutralize.
func isClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			// Check the rest rune by rune.
			for _, r := range s[i:] {
				if r == utf8.RuneError || r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
					return false
				}
			}
			return utf8.ValidString(s[i:])
		}
	}
	return true
}

// displayID is the message id as shown in the typed "[hm:<id>]" trailer: one
// line, no controls, no brackets, no spaces.
func displayID(id string) string {
	id = Neutralize(id)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '[' || r == ']' || r == '\n' || r == '\t' || r == ' ':
			return '_'
		}
		return r
	}, id)
}

// maxFileID bounds the length of a pointer-file name.
const maxFileID = 120

// fileID maps a message id to a safe file name stem: ASCII letters, digits,
// '.', '_' and '-', not starting with '.', at most maxFileID bytes. Ids that
// had to be changed get a short hash suffix so that distinct ids never share
// a file.
func fileID(id string) string {
	var b strings.Builder
	changed := id == ""
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0
		if !ok {
			c, changed = '_', true
		}
		b.WriteByte(c)
	}
	out := b.String()
	if len(out) > maxFileID {
		out, changed = out[:maxFileID], true
	}
	if changed {
		sum := sha256.Sum256([]byte(id))
		out += "-" + hex.EncodeToString(sum[:6])
	}
	return out
}
