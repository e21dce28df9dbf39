package triggers

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
)

// MaxTargetLen bounds the target part of a trigger file name.
const MaxTargetLen = 64

// MaxMessageIDLen bounds message ids accepted in files and by Write
// (msgid.MaxLen).
const MaxMessageIDLen = msgid.MaxLen

const idLinePrefix = "[HM-MESSAGE-ID:"

// ParseName reports whether name is a trigger file name and returns its
// lower-cased target. Accepted: "<target>.txt" and "<target>.<anything>.txt"
// (the extension matched case-insensitively, <anything> non-empty). Not
// accepted: dotfiles, "*.tmp" and other extensions, names containing a path
// separator or NUL, and targets that are not valid names (letters, digits and
// single inner hyphens, at most MaxTargetLen bytes).
func ParseName(name string) (target string, ok bool) {
	if name == "" || name[0] == '.' || strings.ContainsAny(name, "/\\\x00") {
		return "", false
	}
	const ext = ".txt"
	if len(name) <= len(ext) || !strings.EqualFold(name[len(name)-len(ext):], ext) {
		return "", false
	}
	stem := name[:len(name)-len(ext)]
	target, rest, dotted := strings.Cut(stem, ".")
	if dotted && rest == "" {
		return "", false
	}
	if len(target) > MaxTargetLen || !roles.ValidName(target) {
		return "", false
	}
	return strings.ToLower(target), true
}

// ValidMessageID reports whether id may be used as a message id in a trigger
// file name. It is msgid.Valid, the rule the hub applies too.
func ValidMessageID(id string) bool { return msgid.Valid(id) }

// Decoded is a decoded trigger file.
type Decoded struct {
	MessageID string     // from the "[HM-MESSAGE-ID:<id>]" first line, "" if none
	Content   string     // the cleaned message
	Sig       *Signature // from the "[HM-SIG:]" line after the id line, nil if none
}

// Decode turns the raw bytes of a trigger file into its message id (empty when
// the file has no valid "[HM-MESSAGE-ID:<id>]" first line) and its cleaned
// content. UTF-16 LE/BE is recognised by its BOM, a UTF-8 BOM is dropped,
// invalid UTF-8 becomes U+FFFD, CRLF and lone CR become LF, NULs and all other
// control characters except tab and newline are removed, and surrounding
// whitespace is trimmed. A first line of the id form is removed even when the
// id in it is malformed, and so is a signature line after it (see
// DecodeFile). Content with no printable character left returns ErrEmpty.
func Decode(raw []byte) (messageID, content string, err error) {
	d, err := DecodeFile(raw)
	return d.MessageID, d.Content, err
}

// DecodeFile is Decode that also returns the signature: a line
// "[HM-SIG:v1:<role>:<hex>]" right after the id line. A malformed signature
// line, or one without a valid id line before it, is a bad_signature
// RejectError. In a signed file the id and signature lines must each be one
// line as written, ended by "\n" or "\r\n" (a lone "\r", which cleaning
// turns into a line break, is a bad_signature RejectError), and the content
// is made from the signed body alone: the bytes after the signature line.
func DecodeFile(raw []byte) (Decoded, error) {
	var d Decoded
	utf := toUTF8(raw)
	text := clean(utf)
	first, rest, _ := strings.Cut(text, "\n")
	first = strings.TrimSpace(first)
	idLine := len(first) >= len(idLinePrefix)+1 && strings.EqualFold(first[:len(idLinePrefix)], idLinePrefix) && first[len(first)-1] == ']'
	if idLine {
		id := strings.TrimSpace(first[len(idLinePrefix) : len(first)-1])
		if ValidMessageID(id) {
			d.MessageID = id
		}
		text = rest
	}
	second, _, _ := strings.Cut(text, "\n")
	second = strings.TrimSpace(second)
	sig, isSig, err := parseSigLine(second)
	if err != nil {
		return d, err
	}
	l1, l2, body, split := splitHeader(utf)
	if !isSig && idLine && split {
		// A signature line that a lone CR in the id line pushed down.
		_, isSig, _ = parseSigLine(strings.TrimSpace(cleanPart(l2, false)))
	}
	if isSig {
		if d.MessageID == "" {
			return d, Reject(status.CodeBadSignature, "a signed file needs a valid [HM-MESSAGE-ID:<id>] first line")
		}
		// The lines as written must be the lines decoded: otherwise text
		// outside the signed body would reach the content.
		c1, c2 := cleanPart(l1, true), cleanPart(l2, false)
		if !split || sig == nil || strings.Contains(c1, "\n") || strings.Contains(c2, "\n") ||
			strings.TrimSpace(c1) != first || strings.TrimSpace(c2) != second {
			return d, Reject(status.CodeBadSignature, "the [HM-MESSAGE-ID:] and [HM-SIG:] lines must each end in a newline (LF or CRLF) and hold no other line break (such as a lone CR)")
		}
		sig.id = d.MessageID
		sig.payload = []byte(body)
		d.Sig = sig
		text = cleanPart(body, false)
	}
	d.Content = strings.TrimSpace(text)
	firstLine, _, _ := strings.Cut(d.Content, "\n")
	if _, misplaced, _ := parseSigLine(strings.TrimSpace(firstLine)); misplaced {
		return d, Reject(status.CodeBadSignature, "a signature line must come right after the [HM-MESSAGE-ID:] line")
	}
	if blank(d.Content) {
		d.Content = ""
		return d, ErrEmpty
	}
	return d, nil
}

// splitHeader cuts utf, as written, into its first two lines and the rest:
// the body a signature covers. Each line loses the "\n" that ends it and one
// "\r" before that "\n"; a second line without a "\n" is the rest of the
// text and the body is empty. ok is false when utf has no "\n".
func splitHeader(utf string) (l1, l2, body string, ok bool) {
	l1, rest, ok := strings.Cut(utf, "\n")
	if !ok {
		return "", "", "", false
	}
	l2, body, _ = strings.Cut(rest, "\n")
	return strings.TrimSuffix(l1, "\r"), strings.TrimSuffix(l2, "\r"), body, true
}

// toUTF8 converts raw to a Go string according to its BOM. The result may
// still hold invalid UTF-8; clean replaces it.
func toUTF8(raw []byte) string {
	switch {
	case len(raw) >= 3 && raw[0] == 0xEF && raw[1] == 0xBB && raw[2] == 0xBF:
		return string(raw[3:])
	case len(raw) >= 2 && raw[0] == 0xFF && raw[1] == 0xFE:
		return decodeUTF16(raw[2:], false)
	case len(raw) >= 2 && raw[0] == 0xFE && raw[1] == 0xFF:
		return decodeUTF16(raw[2:], true)
	}
	return string(raw)
}

func decodeUTF16(b []byte, bigEndian bool) string {
	units := make([]uint16, len(b)/2)
	for i := range units {
		if bigEndian {
			units[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			units[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
		}
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for _, r := range utf16.Decode(units) {
		sb.WriteRune(r)
	}
	if len(b)%2 == 1 {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

// clean replaces invalid UTF-8 (one U+FFFD per run of bad bytes), normalises
// line endings and removes control characters other than tab and newline, as
// well as a leading U+FEFF.
func clean(s string) string { return cleanPart(s, true) }

// cleanPart is clean for s at the start of a file (start true) or for a part
// of a file after its start, which keeps a leading U+FEFF as clean keeps one
// in the middle of a file.
func cleanPart(s string, start bool) string {
	var sb strings.Builder
	sb.Grow(len(s))
	badRun := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			if !badRun {
				sb.WriteRune(utf8.RuneError)
			}
			badRun = true
			continue
		}
		badRun = false
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue // the \n follows
			}
			sb.WriteByte('\n')
		case r == '\t' || r == '\n':
			sb.WriteRune(r)
		case unicode.IsControl(r):
			// dropped
		case r == '\uFEFF' && start && sb.Len() == 0:
			// a BOM that survived decoding
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// blank reports whether s has nothing printable: only whitespace, replacement
// characters and invisible format characters.
func blank(s string) bool {
	for _, r := range s {
		if r != utf8.RuneError && unicode.IsGraphic(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
