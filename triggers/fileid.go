package triggers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"

	"hm/internal/msgid"
)

// FileID returns the message id "trg-<hex16>" of a trigger file that carries
// no "[HM-MESSAGE-ID:]" line: the first 8 bytes of the SHA-256 of its name,
// inode number, modification time (ns) and size. It names this file, not
// its text: two files with the same name and text written one after the
// other are two messages, while the same file claimed again after a crash
// (a rename keeps inode, mtime and size) keeps its id and is not delivered
// twice.
func FileID(name string, fi fs.FileInfo) string {
	var ino uint64
	if in, ok := statInode(fi); ok {
		ino = in.ino
	}
	h := sha256.New()
	h.Write([]byte(name))
	var b [25]byte
	binary.BigEndian.PutUint64(b[1:], ino)
	binary.BigEndian.PutUint64(b[9:], uint64(fi.ModTime().UnixNano()))
	binary.BigEndian.PutUint64(b[17:], uint64(fi.Size()))
	h.Write(b[:])
	return msgid.TriggerPrefix + hex.EncodeToString(h.Sum(nil)[:8])
}
