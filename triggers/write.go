package triggers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hm/internal/msgid"
	"hm/roles"
)

// DefaultMaxBytes is the largest trigger file accepted (SPEC §7: 256 KiB).
const DefaultMaxBytes = 256 << 10

// ErrBadName is returned by Write for a target or message id that cannot form
// a safe trigger file name.
var ErrBadName = errors.New("invalid trigger name")

// NewMessageID returns a fresh id in the hub's format "hm-<unixms>-<6 random>"
// (msgid.New).
func NewMessageID() string { return msgid.New(time.Now()) }

// Write is hm-send's fallback writer. It writes content into dir (created 0700
// if missing) as "<target>.<messageID>.txt" whose first line is
// "[HM-MESSAGE-ID:<messageID>]". The data goes to a temp dotfile
// ".<name>.<random>.tmp" (mode 0600) that is fsynced and then linked into
// place without replacing anything, so the watcher never sees a partial file
// and an unread file is never overwritten: if the name exists, Write fails with
// an error wrapping fs.ErrExist. An empty messageID gets a fresh one
// (NewMessageID). target and messageID are validated (ErrBadName) so nothing
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
		return "", fmt.Errorf("write trigger: %w", Reject(CodeTooLarge, "%d bytes, the limit is %d", len(data), DefaultMaxBytes))
	}
	name := t + "." + messageID + ".txt"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write trigger: create dir: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+name+"."+hex.EncodeToString(rnd[:])+".tmp")
	final := filepath.Join(dir, name)

	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write trigger: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.WriteString(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write trigger %s: %w", tmp, err)
	}
	if err = publish(tmp, final); err != nil {
		return "", fmt.Errorf("write trigger %s: %w", final, err)
	}
	syncDir(dir)
	return final, nil
}

// publish moves tmp to final without ever replacing an existing final: a hard
// link (atomic, fails if final exists) and an unlink of tmp, or, on file
// systems without hard links, a checked rename.
func publish(tmp, final string) error {
	err := os.Link(tmp, final)
	switch {
	case err == nil:
		_ = os.Remove(tmp)
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	}
	if _, serr := os.Lstat(final); serr == nil {
		return fmt.Errorf("%s: %w", final, fs.ErrExist)
	}
	return os.Rename(tmp, final)
}

// syncDir flushes a directory entry change to disk; best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
