package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// ParseMessageArgs parses the arguments of a command whose last positionals
// are free text (hm send <target> <message...>, hm comms search <query...>),
// by the rule of SPEC §12:
//
//   - -h or --help is help only as the sole argument;
//   - flags are recognised before the first positional, and as one trailing
//     run after the text (`hm-send builder "msg" --role R`): the shortest
//     tail of the arguments that is made entirely of known flags and their
//     values;
//   - fixed positionals (the target) come first; every word after them that
//     is not in the trailing run is text, so a word in the middle of the
//     message is never a flag;
//   - "--" before the text (before or right after the fixed positionals)
//     ends flags: everything after it is text, and it is dropped; a "--"
//     later in the text is text and ends the search for a trailing run;
//   - a text word that ends the text and looks like a long flag (--word)
//     but is not one is an error that says to quote the message, never text
//     sent silently.
//
// It returns the positionals (fixed ones, then the text words).
func ParseMessageArgs(fs *flag.FlagSet, args []string, fixed int) ([]string, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		return nil, flag.ErrHelp
	}
	var flags, pos []string
	i, ended := 0, false
	// Flags before the first positional, then the fixed positionals.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			ended = true
			i++
			break
		}
		if !flagLike(a) {
			break
		}
		n, err := takeFlag(fs, args, i, &flags)
		if err != nil {
			return nil, err
		}
		i = n
	}
	for i < len(args) && len(pos) < fixed {
		pos = append(pos, args[i])
		i++
	}
	if !ended && i < len(args) && args[i] == "--" {
		ended = true
		i++
	}
	text := args[i:]
	if !ended {
		end := len(text)
		if d := indexOf(text, "--"); d >= 0 {
			end = d // flags after a "--" in the text stay text
		}
		run := trailingRun(fs, text, end)
		if run < len(text) {
			n := run
			for n < len(text) {
				var err error
				if n, err = takeFlag(fs, text, n, &flags); err != nil {
					return nil, err
				}
			}
		}
		if err := checkLastWord(fs, text[:run], end >= run); err != nil {
			return nil, err
		}
		text = text[:run]
	}
	pos = append(pos, text...)
	if err := setFlags(fs, flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// trailingRun returns the index in text where the trailing run of known
// flags starts (len(text) when there is none). Only text[:end] is searched,
// and the run must reach the end of text.
func trailingRun(fs *flag.FlagSet, text []string, end int) int {
	if end < len(text) {
		return len(text)
	}
	for k := 0; k < len(text); k++ {
		if isRun(fs, text[k:]) {
			return k
		}
	}
	return len(text)
}

// isRun reports whether args is entirely known flags and their values.
func isRun(fs *flag.FlagSet, args []string) bool {
	var sink []string
	for i := 0; i < len(args); {
		if !flagLike(args[i]) {
			return false
		}
		n, err := takeFlag(fs, args, i, &sink)
		if err != nil {
			return false
		}
		i = n
	}
	return len(args) > 0
}

// checkLastWord refuses text whose last word looks like a long flag: an
// unknown --word, or a known flag missing its value. Such a word is a typo
// or an unquoted message, and sending it as text would surprise.
func checkLastWord(fs *flag.FlagSet, text []string, searched bool) error {
	if !searched || len(text) == 0 {
		return nil
	}
	last := text[len(text)-1]
	if !strings.HasPrefix(last, "--") || !flagLike(last) {
		return nil
	}
	name, _, _ := strings.Cut(strings.TrimLeft(last, "-"), "=")
	if fs.Lookup(name) != nil {
		return fmt.Errorf("flag %s needs a value; to send it as text, quote the message", last)
	}
	return fmt.Errorf("unknown flag %s after the message; to send it as text, quote the message (or put -- before it)", last)
}

// takeFlag appends the flag at args[i] (and its value) to flags and returns
// the index after it. Unknown flags and missing values are errors.
func takeFlag(fs *flag.FlagSet, args []string, i int, flags *[]string) (int, error) {
	a := args[i]
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	f := fs.Lookup(name)
	if f == nil {
		if name == "h" || name == "help" {
			return 0, errors.New("-h/--help takes no other arguments")
		}
		return 0, unknownFlag(fs, a)
	}
	*flags = append(*flags, a)
	if IsBoolFlag(f) || hasValue {
		return i + 1, nil
	}
	if i+1 >= len(args) {
		return 0, fmt.Errorf("flag %s needs a value", a)
	}
	*flags = append(*flags, args[i+1])
	return i + 2, nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
