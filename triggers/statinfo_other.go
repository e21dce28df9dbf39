//go:build !linux

package triggers

import (
	"io/fs"
	"syscall"
	"time"
)

// inodeInfo is what the watcher needs from a file's inode beyond fs.FileInfo.
type inodeInfo struct {
	ino   uint64
	nlink uint64
	uid   uint32
	ctime time.Time
}

func statInode(fi fs.FileInfo) (inodeInfo, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return inodeInfo{}, false
	}
	return inodeInfo{ino: uint64(st.Ino), nlink: uint64(st.Nlink), uid: st.Uid, ctime: time.Unix(st.Ctimespec.Unix())}, true
}
