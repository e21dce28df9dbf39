package triggers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"hm/internal/ground/status"
	"hm/roles"
)

// sigLinePrefix starts the signature line of a signed trigger file; the
// whole line is "[HM-SIG:v1:<role>:<hex HMAC-SHA256>]".
const sigLinePrefix = "[HM-SIG:"

// sigVersion is the only signature format so far.
const sigVersion = "v1"

// Signature is the "[HM-SIG:v1:<role>:<mac>]" line of a trigger file: the
// writer claims role and proves it holds a token with an HMAC-SHA256, keyed
// with that token, of role + "\n" + messageId + "\n" + body, where body is
// the file's text after the newline that ends the signature line, exactly as
// written (UTF-8, before any cleaning).
type Signature struct {
	Role    string // lower-cased role the writer claims
	mac     []byte
	id      string
	payload []byte // the signed body as written; the content is made from it alone
}

// Verify reports whether token made the signature. Comparison is
// constant-time.
func (s *Signature) Verify(token string) bool {
	if s == nil || token == "" || s.payload == nil {
		return false
	}
	return hmac.Equal(s.mac, sigMAC(token, s.Role, s.id, s.payload))
}

func sigMAC(token, role, id string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(role + "\n" + id + "\n"))
	m.Write(body)
	return m.Sum(nil)
}

// SignLine returns the signature line (without its newline) for a file with
// message id id whose body, the text after that line, is body.
func SignLine(token, role, id, body string) string {
	role = strings.ToLower(role)
	return sigLinePrefix + sigVersion + ":" + role + ":" + hex.EncodeToString(sigMAC(token, role, id, []byte(body))) + "]"
}

// parseSigLine parses a cleaned, trimmed line of the signature form. ok is
// false when line is not of that form at all; err is a bad_signature
// RejectError when it is but cannot be read.
func parseSigLine(line string) (sig *Signature, ok bool, err error) {
	if len(line) < len(sigLinePrefix)+1 || !strings.EqualFold(line[:len(sigLinePrefix)], sigLinePrefix) || line[len(line)-1] != ']' {
		return nil, false, nil
	}
	parts := strings.Split(line[len(sigLinePrefix):len(line)-1], ":")
	if len(parts) != 3 || parts[0] != sigVersion {
		return nil, true, Reject(status.CodeBadSignature, "the signature line is not [HM-SIG:%s:<role>:<hex hmac-sha256>]", sigVersion)
	}
	role := strings.ToLower(parts[1])
	mac, herr := hex.DecodeString(parts[2])
	if !roles.ValidName(role) || herr != nil || len(mac) != sha256.Size {
		return nil, true, Reject(status.CodeBadSignature, "the signature line is not [HM-SIG:%s:<role>:<hex hmac-sha256>]", sigVersion)
	}
	return &Signature{Role: role, mac: mac}, true, nil
}

// WriteSigned is Write for a writer that holds a token: the file carries
// "[HM-SIG:v1:<role>:<mac>]" right after its "[HM-MESSAGE-ID:]" line, so the
// hub can tell that it comes from role (SPEC §7). An empty messageID gets a
// fresh one.
func WriteSigned(dir, target, messageID, content, role, token string) (path string, err error) {
	if token == "" {
		return "", fmt.Errorf("write signed trigger: no token")
	}
	if r := strings.ToLower(role); len(r) > MaxTargetLen || !roles.ValidName(r) {
		return "", fmt.Errorf("write signed trigger: role %q: %w", role, ErrBadName)
	}
	if blank(clean(content)) {
		return "", fmt.Errorf("write trigger: %w", ErrEmpty)
	}
	if messageID == "" {
		messageID = NewMessageID()
	}
	return Write(dir, target, messageID, SignLine(token, role, messageID, content)+"\n"+content)
}
