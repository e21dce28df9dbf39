// Package roles defines the team: who the agents are, how targets and aliases
// resolve to them, and how the role header "(ROLE #N): body" that starts every
// agent message is parsed.
package roles

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"hm/internal/ground/status"
)

// Header is a parsed role header such as "(BUILDER-BG-2 #7):".
type Header struct {
	Role string // upper-cased header name, e.g. "BUILDER-BG-2"
	Seq  int64  // the sender's sequence number N
}

// String renders the header as it is typed: "(ROLE #N): ".
func (h Header) String() string {
	return "(" + h.Role + " #" + strconv.FormatInt(h.Seq, 10) + "): "
}

// Ref renders the reference form "ROLE #N".
func (h Header) Ref() string { return h.Role + " #" + strconv.FormatInt(h.Seq, 10) }

// MaxSeq bounds sequence numbers: N is below 2^53, so it is exact in JSON
// numbers and SQLite integers. A sender that has used 2^53-1 has no next
// number; the hub refuses its next message with bad_header.
const MaxSeq = 1 << 53

// ErrBadHeader is returned by CheckHeader for a role header whose number is
// out of range.
var ErrBadHeader = errors.New(string(status.CodeBadHeader))

// CheckHeader reports a text that starts like a role header ("(ROLE #") but
// whose N is not a number below MaxSeq. ParseHeader treats such text as
// having no header; a hub must refuse it rather than store a number its own
// headers could not carry.
func CheckHeader(s string) error {
	if _, _, ok := ParseHeader(s); ok {
		return nil
	}
	rest := s
	if strings.HasPrefix(rest, "[AGENT MSG") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return nil
		}
		rest = strings.TrimLeft(rest[end+1:], " ")
	}
	if !strings.HasPrefix(rest, "(") {
		return nil
	}
	n := nameLen(rest[1:])
	if n == 0 {
		return nil
	}
	rest = strings.TrimPrefix(rest[1+n:], " ")
	if !strings.HasPrefix(rest, "#") {
		return nil
	}
	rest = rest[1:]
	d := 0
	for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
		d++
	}
	if d == 0 || !strings.HasPrefix(rest[d:], "):") {
		return nil
	}
	return fmt.Errorf("%w: the header number %s is not below 2^53", ErrBadHeader, clip(rest[:d], 24))
}

// ParseHeader parses an optional "[AGENT MSG ...]" prefix, then "(", ROLE,
// optional space, "#", N, "):", optional space. It returns the header, the body
// after it, and whether a header was present. Without a header, body is s.
func ParseHeader(s string) (Header, string, bool) {
	rest := s
	if strings.HasPrefix(rest, "[AGENT MSG") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return Header{}, s, false
		}
		rest = strings.TrimLeft(rest[end+1:], " ")
	}
	if !strings.HasPrefix(rest, "(") {
		return Header{}, s, false
	}
	rest = rest[1:]
	n := nameLen(rest)
	if n == 0 {
		return Header{}, s, false
	}
	role := strings.ToUpper(rest[:n])
	rest = rest[n:]
	rest = strings.TrimPrefix(rest, " ")
	if !strings.HasPrefix(rest, "#") {
		return Header{}, s, false
	}
	rest = rest[1:]
	d := 0
	for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
		d++
	}
	if d == 0 || d > 16 {
		return Header{}, s, false
	}
	seq, err := strconv.ParseInt(rest[:d], 10, 64)
	if err != nil || seq >= MaxSeq {
		return Header{}, s, false
	}
	rest = rest[d:]
	if !strings.HasPrefix(rest, "):") {
		return Header{}, s, false
	}
	rest = strings.TrimPrefix(rest[2:], " ")
	return Header{Role: role, Seq: seq}, rest, true
}

// QuoteMark starts a line of a message's content that ViewContent quoted.
const QuoteMark = "> "

// ViewContent renders a message's stored content for a view (the text
// typed into a pane and its pointer file, a hook's context, hm mcp's
// bodies and channel pushes, hm comms, the briefing and handoff). The
// content's first line, where the hub put or checked the sender's header,
// stays first and as it is; every later line that reads as the start of
// another message — a role header (ParseHeader, after leading blanks,
// such as "(ARCH #77): …") or the typed "[AGENT MSG" prefix — is quoted
// with QuoteMark, so no line inside a body can pass for another role's
// message. Lines break at LF, CR and U+2028/U+2029. The stored body is
// never changed; content without such a line is returned as it is.
func ViewContent(content string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		i += size
		if r != '\n' && r != '\r' && r != '\u2028' && r != '\u2029' {
			continue
		}
		if r == '\r' && i < len(content) && content[i] == '\n' {
			continue // CRLF: the line starts after the LF
		}
		if !startsMessage(content[i:]) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(content) + 8)
		}
		b.WriteString(content[last:i])
		b.WriteString(QuoteMark)
		last = i
	}
	if last == 0 {
		return content
	}
	b.WriteString(content[last:])
	return b.String()
}

// startsMessage reports whether a line (up to its end) reads as the start
// of a message: after blanks, a role header or the "[AGENT MSG" prefix.
func startsMessage(line string) bool {
	line = strings.TrimLeft(line, " \t")
	if strings.HasPrefix(strings.ToUpper(line[:min(len(line), len("[AGENT MSG"))]), "[AGENT MSG") {
		return true
	}
	_, _, ok := ParseHeader(line)
	return ok || CheckHeader(line) != nil
}

// ValidName reports whether s is a role or header name: ASCII letters and
// digits with single hyphens between them.
func ValidName(s string) bool { return s != "" && nameLen(s) == len(s) }

// nameLen returns the length of the longest valid name prefix of s: letters,
// digits and single inner hyphens. A trailing hyphen is not part of the name.
func nameLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			n = i + 1
		case c == '-' && i > 0 && s[i-1] != '-':
			// a hyphen is only kept if a letter or digit follows
		default:
			return n
		}
	}
	return n
}

// Priority tags that may follow the header.
const (
	TagAckRequired = "[ACK REQUIRED]"
	TagUrgent      = "[URGENT]"
	TagFYI         = "[FYI]"
	TagTask        = "[TASK]"
)

var allTags = []string{TagAckRequired, TagUrgent, TagFYI, TagTask}

// Tags returns the priority tags at the start of body (after the header), in
// order of appearance. Matching is case-insensitive.
func Tags(body string) []string {
	var out []string
	rest := strings.TrimLeft(body, " ")
	for {
		found := false
		for _, t := range allTags {
			if len(rest) >= len(t) && strings.EqualFold(rest[:len(t)], t) {
				out = append(out, t)
				rest = strings.TrimLeft(rest[len(t):], " ")
				found = true
				break
			}
		}
		if !found {
			return out
		}
	}
}

// PriorityTags lists the priority tags a message may start with, in the
// order a person is offered them (the cockpit's compose).
func PriorityTags() []string { return slices.Clone(allTags) }

// ShownTags are the tags a view shows for a message whose text after the
// header is body: its priority tags, and its priority when that is neither
// normal nor what the tags make it (Priority: [URGENT] makes it urgent).
func ShownTags(body, priority string) []string {
	tags := Tags(body)
	if priority != "" && priority != status.PriorityNormal && priority != Priority("", body) {
		tags = append(tags, priority)
	}
	return tags
}

// Priority returns the priority a message with body (after the header) is
// recorded with: declared, normal when empty, and urgent when normal and
// the body's priority tags include [URGENT].
func Priority(declared, body string) string {
	if declared == "" {
		declared = status.PriorityNormal
	}
	if declared == status.PriorityNormal && HasTag(body, TagUrgent) {
		return status.PriorityUrgent
	}
	return declared
}

// Urgent reports whether a message jumps a pane's queue: its priority is
// urgent, or the priority tags right after its header include [URGENT].
// content may start with the "[AGENT MSG ...]" prefix and the "(ROLE #N):"
// header (see ParseHeader).
func Urgent(content, priority string) bool {
	if priority == status.PriorityUrgent {
		return true
	}
	_, body, _ := ParseHeader(content)
	return HasTag(body, TagUrgent)
}

// HasTag reports whether body carries tag among its leading priority tags.
func HasTag(body, tag string) bool {
	for _, t := range Tags(body) {
		if t == tag {
			return true
		}
	}
	return false
}

// Refs returns every "HEADER #N" reference in body, upper-cased and
// de-duplicated, in order of first appearance.
func Refs(body string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(body); i++ {
		if body[i] != '#' {
			continue
		}
		// digits after '#'
		j := i + 1
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			j++
		}
		if j == i+1 || j-i-1 > 16 {
			continue
		}
		// name before '#', with at most one space in between
		k := i
		if k > 0 && body[k-1] == ' ' {
			k--
		}
		start := k
		for start > 0 && isNameByte(body[start-1]) {
			start--
		}
		for start < k && body[start] == '-' {
			start++
		}
		name := body[start:k]
		if name == "" || !ValidName(name) || !hasLetter(name) {
			continue
		}
		ref := strings.ToUpper(name) + " #" + body[i+1:j]
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	return out
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// Signal kinds recorded from tagged lines.
var signalKinds = []string{"DECISION", "TASK", "FINDING", "BLOCKER"}

// Signal is a tagged line such as "DECISION: use SQLite".
type Signal struct {
	Kind string // DECISION, TASK, FINDING or BLOCKER
	Text string
}

// Signals returns the tagged lines of body: lines starting with DECISION:,
// TASK:, FINDING: or BLOCKER: (leading spaces and priority tags allowed on
// the first line).
func Signals(body string) []Signal {
	var out []Signal
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if i == 0 {
			for {
				trimmed := false
				for _, t := range allTags {
					if len(line) >= len(t) && strings.EqualFold(line[:len(t)], t) {
						line = strings.TrimSpace(line[len(t):])
						trimmed = true
					}
				}
				if !trimmed {
					break
				}
			}
		}
		for _, k := range signalKinds {
			if len(line) > len(k) && strings.EqualFold(line[:len(k)], k) && line[len(k)] == ':' {
				text := strings.TrimSpace(line[len(k)+1:])
				if text != "" {
					out = append(out, Signal{Kind: k, Text: text})
				}
				break
			}
		}
	}
	return out
}
