// This file holds the word-level helpers InferProfile reads a command with:
// options, assignments, program names.

package roles

import "strings"

// skipOptions drops leading options (and the arguments of those in withArg)
// up to and including "--". dashIsOption treats a lone "-" as an option (env).
func skipOptions(w []string, withArg map[string]bool, dashIsOption bool) []string {
	for len(w) > 0 {
		a := w[0]
		switch {
		case a == "--":
			return w[1:]
		case a == "-" && dashIsOption:
		case len(a) < 2 || a[0] != '-':
			return w
		case withArg[a]:
			w = w[min(1, len(w)-1):]
		}
		w = w[1:]
	}
	return w
}

// optionValue returns the value of the option at w[0] (given as short
// "-S value", "-Svalue", long "--long value" or "--long=value") and the
// words after it.
func optionValue(w []string, short, long string) (value string, rest []string) {
	a := w[0]
	switch {
	case a == short || a == long:
		if len(w) > 1 {
			return w[1], w[2:]
		}
		return "", nil
	case strings.HasPrefix(a, long+"="):
		return strings.TrimPrefix(a, long+"="), w[1:]
	case strings.HasPrefix(a, short):
		return strings.TrimPrefix(a, short), w[1:]
	}
	return "", w[1:]
}

// progName is the lower-cased base name of a command word.
func progName(word string) string {
	return strings.ToLower(word[strings.LastIndexByte(word, '/')+1:])
}

// isShellVar reports whether word is $SHELL, ${SHELL} or ${SHELL:-…}.
func isShellVar(word string) bool {
	return word == "$SHELL" || word == "${SHELL}" || strings.HasPrefix(word, "${SHELL:")
}

// IsAssignment reports whether word is a NAME=value assignment.
func IsAssignment(word string) bool {
	i := strings.IndexByte(word, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := word[j]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (j == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
