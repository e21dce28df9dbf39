package journal

import "strings"

// ftsQuery rewrites a search query so that words with punctuation FTS5's
// query syntax has no meaning for (hm-send, #12, don't, /tmp/x.txt,
// v1.2.3) are searched as phrases of their tokens instead of failing as
// malformed. Everything FTS5 gives a meaning to is left alone: "quoted
// phrases", parentheses, AND/OR/NOT/NEAR, prefix*, ^initial, column:
// filters, {column sets} and +, so a query that is malformed in FTS5's
// syntax (an unterminated quote, a dangling operator, an unknown column)
// still fails.
func ftsQuery(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '"':
			j := stringEnd(q, i)
			b.WriteString(q[i:j])
			i = j
		case ftsDelimiter(c):
			b.WriteByte(c)
			i++
		default:
			j := i
			for j < len(q) && q[j] != '"' && !ftsDelimiter(q[j]) {
				j++
			}
			w := q[i:j]
			if plainPunctuation(w) {
				b.WriteByte('"')
				b.WriteString(w)
				b.WriteByte('"')
			} else {
				b.WriteString(w)
			}
			i = j
		}
	}
	return b.String()
}

// stringEnd returns the index just past the FTS5 string starting at q[i]
// (a '"'; "" inside is an escaped quote), or len(q) when it is unterminated.
func stringEnd(q string, i int) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] != '"' {
			continue
		}
		if j+1 < len(q) && q[j+1] == '"' {
			j++
			continue
		}
		return j + 1
	}
	return len(q)
}

// ftsDelimiter reports whether c separates words in an FTS5 query.
func ftsDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '(', ')', ',':
		return true
	}
	return false
}

// plainPunctuation reports whether w holds an ASCII character that is
// neither part of an FTS5 bareword (letters, digits, '_', 0x1A, non-ASCII)
// nor FTS5 syntax ('*', '^', ':', '{', '}', '+').
func plainPunctuation(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 0x80, c == '_', c == 0x1A, c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("*^:{}+", c) >= 0:
		default:
			return true
		}
	}
	return false
}
