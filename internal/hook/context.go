package hook

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"hm/broker/proto"
)

// MaxContext is the most a hook puts in the agent's context, in characters
// as the CLIs count them (UTF-16 code units). Claude Code replaces a hook
// output over 10,000 characters by a file and a short preview; hm keeps
// under it itself: the messages that do not fit stay queued (typed, or
// taken by the next hook), the handoff becomes its path and a preview.
const MaxContext = 10000

// previewMax bounds the start of a handoff too long to show whole.
const previewMax = 2000

// Doc is the session handoff shown to an agent that starts or lost its
// context.
type Doc struct {
	Path string // where it is
	Text string // what it says; "" when there is none
}

// Context is what a hook event puts in the agent's context.
type Context struct {
	Text string // "" when there is nothing to say
	// Emitted are the claimed messages Text carries, in order; the others
	// go back to the pane.
	Emitted []string
}

// Compose renders what e puts in the agent's context from the hub's answer
// to its claim. For SessionStart: the role's session line and brief and
// the session handoff doc, unless the claimed messages start with the
// session's first message to the role (which carries its own), and of the
// messages only that one. Otherwise the claimed messages, in order, as
// many as fit MaxContext.
func Compose(e Event, res proto.ClaimResult, doc Doc) Context {
	var head, docFull, docRef string
	if s := res.Session; e.Kind == SessionStart && s != nil && !claimedStart(res) {
		head = s.Line + "\n\n" + s.Brief
		if doc.Text != "" {
			docFull = "The session handoff (" + doc.Path + "):\n\n" + doc.Text
			docRef = fmt.Sprintf("The session handoff is %s (%d characters): read it. It begins:\n\n", doc.Path, Len(doc.Text))
		}
	}
	// What the parts other than the messages may take at most.
	reserved := Len(head) + min(Len(docFull), Len(docRef)+previewMax+1) + introMax + 3*len("\n\n")
	var msgs []string
	var out Context
	used := 0
	for _, m := range res.Messages {
		if e.Kind == SessionStart && (res.Session == nil || m.MessageID != res.Session.StartID) {
			// A session start begins no turn: a message carried in its
			// context would reach the model only when something else
			// prompts it. Only the session's first message (the session
			// line) goes this way; the rest are typed, which starts a turn.
			break
		}
		n := Len(m.Text) + len("\n\n")
		if reserved+used+n > MaxContext || !e.Carries(m.Text) {
			break // it and those after it stay queued: the order holds
		}
		used += n
		msgs = append(msgs, m.Text)
		out.Emitted = append(out.Emitted, m.MessageID)
	}
	var parts []string
	if head != "" {
		parts = append(parts, head)
	}
	var msgPart string
	if len(msgs) > 0 {
		msgPart = intro(e.Kind, len(msgs), res.Role) + "\n\n" + strings.Join(msgs, "\n\n")
	}
	if docFull != "" {
		left := MaxContext - Len(head) - Len(msgPart) - 2*len("\n\n")
		if Len(docFull) <= left {
			parts = append(parts, docFull)
		} else {
			parts = append(parts, docRef+preview(doc.Text, min(previewMax, left-Len(docRef)-1))+"…")
		}
	}
	if msgPart != "" {
		parts = append(parts, msgPart)
	}
	out.Text = strings.Join(parts, "\n\n")
	return out
}

// claimedStart reports whether the claim took the session's first message
// to the role (its session line, brief and briefing or handoff pointer).
func claimedStart(res proto.ClaimResult) bool {
	for _, m := range res.Messages {
		if m.MessageID == res.Session.StartID {
			return true
		}
	}
	return false
}

// introMax bounds the line introducing the messages.
const introMax = 120

// intro is the line before n messages for role.
func intro(k Kind, n int, role string) string {
	what, them := "1 message", "it"
	if n > 1 {
		what, them = strconv.Itoa(n)+" messages", "them"
	}
	who := "you"
	if role != "" {
		who = "you (" + role + ")"
	}
	switch k {
	case Stop:
		return "hm: " + what + " for " + who + " arrived; handle " + them + " before you stop:"
	case Tool:
		return "hm: " + what + " for " + who + " arrived while you work:"
	case Wake:
		return "hm: " + what + " for " + who + " arrived while you were idle; handle " + them + ":"
	}
	return "hm: " + what + " for " + who + " from your team:"
}

// preview is the start of text, at most n characters (UTF-16 code units),
// cut at the end of a line when one ends in its second half.
func preview(text string, n int) string {
	if n <= 0 {
		return ""
	}
	if Len(text) <= n {
		return text
	}
	used, end := 0, 0
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if used+w > n {
			break
		}
		used += w
		end += size
	}
	cut := text[:end]
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i+1]
	}
	return cut
}

// Len is the length of s as the CLIs count characters: UTF-16 code units
// (JavaScript's String.length), so a character outside the Basic
// Multilingual Plane counts two.
func Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
