package agent

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"hm/roles"
)

// Typing format (SPEC §6).
const (
	// AgentPrefix starts every message typed into a pane.
	AgentPrefix = "[AGENT MSG - reply via hm-send] "
	// PasteStart and PasteEnd delimit a bracketed paste.
	PasteStart = "\x1b[200~"
	PasteEnd   = "\x1b[201~"
	// MaxInlineBody is the largest body typed directly; longer bodies go
	// to a pointer file.
	MaxInlineBody = 4096
	// previewRunes bounds the body preview on a pointer line.
	previewRunes = 160
)

// composeOpts are the inputs that decide how a message is typed.
type composeOpts struct {
	ID        string // message id, shown in the trailer
	Content   string // message content, role header included, not yet shown (neutralised, quoted)
	Shell     bool   // shell profile: type only an inert pointer line
	Bracketed bool   // the program last enabled bracketed paste
	MultiLine bool   // the profile takes a multi-line paste as one prompt
	Dir       string // the program's working directory, for a relative pointer path
	// MaxLine, when positive, is the longest line the program can read,
	// in bytes with its newline: the terminal's canonical-mode limit
	// while the program reads cooked lines. A longer text would reach it
	// cut, so the body goes to the pointer file.
	MaxLine int
}

// composition is the text to type for one message.
type composition struct {
	Text    string // bytes written before the separate Enter
	Pointer bool   // the body must be stored in the pointer file named in Text
	Body    string // content as shown: the pointer-file content when Pointer is set
}

// shown is content as a pane or a hook's context shows it: neutralised
// for the terminal (Neutralize), then with every later line that reads as
// another message's header quoted (roles.ViewContent), so one role cannot
// plant a line that looks like another's message.
func shown(content string) string { return roles.ViewContent(Neutralize(content)) }

// Trailer returns the receipt trailer "[hm:<id>]" for a message id, or ""
// for an empty id.
func Trailer(messageID string) string {
	if messageID == "" {
		return ""
	}
	return trailerMark + displayID(messageID) + "]"
}

// trailerMark starts every receipt trailer.
const trailerMark = "[hm:"

// compose renders a message. pointerPath is the file the body would be
// written to when it cannot be typed inline.
func compose(o composeOpts, pointerPath string) composition {
	full := shown(o.Content)
	body := strings.Trim(full, " \t\n")
	trailer := Trailer(o.ID)
	c := composition{Body: full}
	if o.Shell {
		// Message text is never typed into a shell (SPEC §6): only a
		// pointer line that no shell executes.
		c.Pointer = true
		c.Text = shellLine(o, pointerPath, trailer)
		return c
	}
	// A multi-line body goes inline only as a bracketed paste into a
	// program that takes one as a single prompt; elsewhere a newline could
	// submit part of it.
	multiLine := strings.Contains(body, "\n")
	c.Pointer = len(body) > MaxInlineBody || multiLine && !(o.Bracketed && o.MultiLine)
	if !c.Pointer && o.MaxLine > 0 && len(renderLine(o, body, trailer)) >= o.MaxLine {
		c.Pointer = true
	}
	line := body
	if c.Pointer {
		line = pointerLine(body, len(full), pointerPath)
	}
	c.Text = renderLine(o, line, trailer)
	return c
}

// composeContext renders a message for the agent's context rather than its
// terminal (a CLI hook's output, see Pane.Claim): AgentPrefix, the
// neutralised content with its lines as they are, and the trailer ending
// the last line; a body over MaxInlineBody is replaced by its pointer line,
// as when typed, and goes to the file at pointerPath.
func composeContext(id, content, pointerPath string) composition {
	full := shown(content)
	body := strings.Trim(full, " \t\n")
	c := composition{Body: full, Pointer: len(body) > MaxInlineBody}
	line := body
	if c.Pointer {
		line = pointerLine(body, len(full), pointerPath)
	}
	c.Text = AgentPrefix + line + sep(Trailer(id), " ")
	return c
}

// renderLine wraps an already safe line (or, as a bracketed paste to a
// multi-line profile, a multi-line body) into what is typed. The trailer
// ends the last line, never a line of its own.
func renderLine(o composeOpts, line, trailer string) string {
	s := AgentPrefix + line + sep(trailer, " ")
	if !(o.Bracketed && o.MultiLine) {
		s = AgentPrefix + flatten(line) + sep(trailer, " ")
	}
	if o.Bracketed {
		s = PasteStart + s + PasteEnd
	}
	return s
}

// shellLine is what a shell pane gets for a message: the ":" builtin (a
// no-op in sh, bash, dash, ksh, zsh and fish) with one single-quoted
// argument naming the file that holds the message. Inside single quotes
// nothing expands in any of those shells; the quote itself and the
// backslash (an escape inside fish's single quotes) are replaced, and the
// line is one line of printable text, so no part of it can run. The path
// is relative to the pane's directory when it lies below it.
func shellLine(o composeOpts, pointerPath, trailer string) string {
	path := pointerPath
	if o.Dir != "" {
		if rel, err := filepath.Rel(o.Dir, pointerPath); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
	}
	arg := AgentPrefix + "message in " + path + sep(trailer, " ")
	arg = strings.NewReplacer("'", "?", "\\", "?").Replace(flatten(Neutralize(arg)))
	s := ": '" + arg + "'"
	if o.Bracketed {
		s = PasteStart + s + PasteEnd
	}
	return s
}

// sep returns s prefixed with separator, or "" when s is empty.
func sep(s, separator string) string {
	if s == "" {
		return ""
	}
	return separator + s
}

// flatten makes a line safe to type outside a paste: tabs (which trigger
// completion in many line editors) become spaces and any newline becomes a
// visible "⏎".
func flatten(s string) string {
	if !strings.ContainsAny(s, "\t\n") {
		return s
	}
	return strings.NewReplacer("\t", " ", "\n", " ⏎ ").Replace(s)
}

// pointerLine is the single line typed instead of a body stored in a file.
func pointerLine(body string, size int, path string) string {
	first, _, more := strings.Cut(body, "\n")
	preview := strings.TrimSpace(first)
	cut := false
	if utf8.RuneCountInString(preview) > previewRunes {
		n := 0
		for i := range preview {
			if n == previewRunes {
				preview = preview[:i]
				break
			}
			n++
		}
		cut = true
	}
	if cut || more {
		preview += " …"
	}
	return preview + " [full message (" + strconv.Itoa(size) + " bytes) in " + flatten(Neutralize(path)) + "]"
}
