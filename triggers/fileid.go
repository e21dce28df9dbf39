package triggers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"

	"hm/internal/ground/msgid"
)

// FileID returns the message id "trg-<hex16>" of a trigger file that carries
// no "[HM-MESSAGE-ID:]" line: the first 8 bytes of the SHA-256 of its name,
// inode number, modification time (ns), size and inode change time (ns).
// It names this file as claimed, not its text: the watcher computes it
// after the claim's rename, which sets the change time, so the same file
// claimed again after a crash (left in .claimed/, untouched) keeps its id
// and is not delivered twice, while two files with the same name and text
// are two messages even when the second reuses the first one's inode and
// was given its modification time (cp -p, touch -r): a writer can choose
// the mtime, never the change time.
func FileID(name string, fi fs.FileInfo) string {
	var in inodeInfo
	if got, ok := statInode(fi); ok {
		in = got
	}
	h := sha256.New()
	h.Write([]byte(name))
	var b [33]byte
	binary.BigEndian.PutUint64(b[1:], in.ino)
	binary.BigEndian.PutUint64(b[9:], uint64(fi.ModTime().UnixNano()))
	binary.BigEndian.PutUint64(b[17:], uint64(fi.Size()))
	if !in.ctime.IsZero() {
		binary.BigEndian.PutUint64(b[25:], uint64(in.ctime.UnixNano()))
	}
	h.Write(b[:])
	return msgid.TriggerPrefix + hex.EncodeToString(h.Sum(nil)[:8])
}
