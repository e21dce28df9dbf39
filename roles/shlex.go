// This file is the small shell lexer InferProfile reads command lines with.

package roles

import "strings"

// splitWords splits s into words with shell quoting, ignoring operators.
func splitWords(s string) []string {
	var out []string
	for _, cmd := range lex(s, false) {
		out = append(out, cmd...)
	}
	return out
}

// splitCommands splits a shell line into simple commands, as word lists
// with quotes removed and redirections dropped. Of each pipeline only the
// first command is kept.
func splitCommands(line string) [][]string {
	return lex(line, true)
}

// lex is a small shell lexer: words with '…', "…" and \ quoting, comments,
// redirections (dropped with their target) and, when ops is set, the
// operators ; & && || | |& ( ) and newlines, which end a command. A word
// after | until the next other operator is dropped. Unterminated quotes end
// at the end of the input.
func lex(s string, ops bool) [][]string {
	var (
		cmds     [][]string
		cur      []string
		word     strings.Builder
		inWord   bool
		dropNext bool // the next word is a redirection target
		piped    bool // inside a pipeline after its first command
	)
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if dropNext {
			dropNext = false
			return
		}
		if !piped {
			cur = append(cur, w)
		}
	}
	endCmd := func(pipe bool) {
		endWord()
		dropNext = false
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
		piped = pipe
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || (c == '\n' && !ops):
			endWord()
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				word.WriteString(s[i+1:])
				i = len(s)
				break
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				word.WriteByte(s[i])
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					inWord = true
					word.WriteByte(s[i])
				}
			}
		case c == '#' && !inWord:
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case c == '>' || c == '<' || c == '&' && i+1 < len(s) && s[i+1] == '>':
			// A redirection: drop a file-descriptor number before it and
			// the target after it.
			if inWord && isDigits(word.String()) {
				word.Reset()
				inWord = false
			}
			endWord()
			for i+1 < len(s) && strings.IndexByte("<>&|-", s[i+1]) >= 0 {
				i++
			}
			dropNext = true
		case !ops:
			inWord = true
			word.WriteByte(c)
		case c == '\n' || c == ';' || c == '(' || c == ')':
			endCmd(false)
		case c == '&':
			if i+1 < len(s) && s[i+1] == '&' {
				i++
			}
			endCmd(false)
		case c == '|':
			switch {
			case i+1 < len(s) && s[i+1] == '|':
				i++
				endCmd(false)
			case i+1 < len(s) && s[i+1] == '&':
				i++
				endCmd(true)
			default:
				endCmd(true)
			}
		default:
			inWord = true
			word.WriteByte(c)
		}
	}
	endCmd(false)
	return cmds
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
