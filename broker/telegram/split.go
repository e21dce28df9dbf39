package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPartLen is the longest outbound part, in UTF-16 code units. Telegram
// accepts 4096; the margin keeps every part safely under it.
const MaxPartLen = 4000

// Split cuts text into parts of at most limit UTF-16 code units (Telegram
// counts message length that way; a rune outside the Basic Multilingual Plane
// counts two). It prefers to cut at the last paragraph break ("\n\n") that
// fits, then the last line break, then the last space, and only then inside a
// word (never inside a rune). The whitespace at each cut and around the whole
// text is dropped; parts are non-empty, in order, and contain everything else
// verbatim. A text that is empty or only whitespace gives no parts. A limit
// below 2 is treated as 2, the smallest that fits every rune.
func Split(text string, limit int) []string {
	if limit < 2 {
		limit = 2
	}
	var parts []string
	rest := strings.TrimFunc(text, unicode.IsSpace)
	for rest != "" {
		cut, whole := prefixWithin(rest, limit)
		if whole {
			parts = append(parts, rest)
			break
		}
		part, next := rest[:cut], rest[cut:]
		if at := breakPoint(rest, cut); at > 0 {
			part, next = rest[:at], rest[at:]
		}
		if part = strings.TrimRightFunc(part, unicode.IsSpace); part != "" {
			parts = append(parts, part)
		}
		rest = strings.TrimLeftFunc(next, unicode.IsSpace)
	}
	return parts
}

// breakPoint returns the byte index in rest where the preferred cut starts,
// given that rest[:cut] is the longest prefix that fits: a paragraph break,
// else a line break, else a space (a break right at cut counts). It returns
// 0 or -1 when there is none after the first byte.
func breakPoint(rest string, cut int) int {
	if i := strings.LastIndex(rest[:min(len(rest), cut+2)], "\n\n"); i > 0 {
		return i
	}
	if i := strings.LastIndexByte(rest[:min(len(rest), cut+1)], '\n'); i > 0 {
		return i
	}
	if r, _ := utf8.DecodeRuneInString(rest[cut:]); unicode.IsSpace(r) {
		return cut
	}
	return strings.LastIndexFunc(rest[:cut], unicode.IsSpace)
}

// prefixWithin returns the byte length of the longest prefix of s that is at
// most limit UTF-16 code units, and whether that prefix is all of s.
func prefixWithin(s string, limit int) (int, bool) {
	units := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n := utf16Units(r)
		if units+n > limit {
			return i, false
		}
		units += n
		i += size
	}
	return len(s), true
}

// UTF16Len returns the length of s in UTF-16 code units, as Telegram counts
// it. Invalid bytes count one each.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Units(r)
	}
	return n
}

func utf16Units(r rune) int {
	if r >= 0x10000 && r <= unicode.MaxRune {
		return 2
	}
	return 1
}
