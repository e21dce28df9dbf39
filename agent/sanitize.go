package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Neutralize makes message text safe to type into a terminal program. It
// keeps printable text, newlines and tabs; it turns CR LF and lone CR into
// LF (a CR would act as Enter); it replaces ESC and the other C0 controls
// and DEL with their visible Unicode "control pictures" (ESC becomes "␛"),
// and C1 controls and invalid UTF-8 with U+FFFD; and it shows bidirectional
// controls and zero-width characters as <U+XXXX> (see invisible), so what an
// agent reads is what the text says. The result therefore never
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
		case invisible(r) && !(r == zwj && joinsEmoji(s, i, size)):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

const zwj = 0x200D // zero-width joiner

// invisible reports the format characters that change how text reads
// without being seen: bidirectional controls (which can make "rm -rf"
// display as something else) and zero-width characters. Neutralize shows
// them as <U+XXXX>.
func invisible(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069: // embeddings, overrides, isolates
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C: // LRM, RLM, ALM
		return true
	case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E: // zero-width, invisible operators, BOM
		return true
	}
	return false
}

// joinsEmoji reports whether the zero-width joiner at s[i:i+size] sits
// between two pictographs, as in a family emoji, where it is part of what
// the reader sees rather than a trick.
func joinsEmoji(s string, i, size int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if prev == 0xFE0F { // a variation selector after the pictograph
		prev, _ = utf8.DecodeLastRuneInString(s[:i-3])
	}
	next, _ := utf8.DecodeRuneInString(s[i+size:])
	return pictograph(prev) && pictograph(next)
}

func pictograph(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF
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
				if r == utf8.RuneError || r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || invisible(r) {
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
