package triggers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/atomicfile"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
)

// DefaultMaxBytes is the largest trigger file accepted (SPEC §7: 256 KiB),
// the same number as the largest message a frame may carry: one limit.
const DefaultMaxBytes = proto.MaxMessageFrame

// ErrBadName is returned by Write for a target or message id that cannot form
// a safe trigger file name.
var ErrBadName = errors.New("invalid trigger name")

// NewMessageID returns a fresh id in the hub's format "hm-<unixms>-<6 random>"
// (msgid.New).
func NewMessageID() string { return msgid.New(time.Now()) }

// Write is hm-send's fallback writer. It writes content into dir (created 0700
// if missing) as "<target>.<messageID>.txt" whose first line is
// "[HM-MESSAGE-ID:<messageID>]". The file (mode 0600) is written with
// atomicfile.WriteNew: a temp dotfile ".<name>.<random>.tmp", fsynced and then
// linked into place without replacing anything, so the watcher never sees a
// partial file and an unread file is never overwritten: if the name exists,
// Write fails with an error wrapping fs.ErrExist. An empty messageID gets a
// fresh one (NewMessageID). target and messageID are validated (ErrBadName) so nothing
// is ever written outside dir; empty content returns ErrEmpty and content over
// DefaultMaxBytes a too_large RejectError, since the hub would refuse both.
func Write(dir, target, messageID, content string) (path string, err error) {
	t := strings.ToLower(target)
	if len(t) > MaxTargetLen || !roles.ValidName(t) {
		return "", fmt.Errorf("write trigger: target %q: %w", target, ErrBadName)
	}
	if messageID == "" {
		messageID = NewMessageID()
	}
	if !ValidMessageID(messageID) {
		return "", fmt.Errorf("write trigger: message id %q: %w", messageID, ErrBadName)
	}
	if blank(clean(content)) {
		return "", fmt.Errorf("write trigger: %w", ErrEmpty)
	}
	data := idLinePrefix + messageID + "]\n" + content
	if len(data) > DefaultMaxBytes {
		return "", fmt.Errorf("write trigger: %w", Reject(status.CodeTooLarge, "%d bytes, the limit is %d", len(data), DefaultMaxBytes))
	}
	name := t + "." + messageID + ".txt"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write trigger: create dir: %w", err)
	}
	final := filepath.Join(dir, name)
	if err := atomicfile.WriteNew(final, []byte(data), 0o600); err != nil {
		return "", fmt.Errorf("write trigger: %w", err)
	}
	return final, nil
}
