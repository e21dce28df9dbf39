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

// statInode reads fi's inode fields; false when fi carries no Stat_t.
func statInode(fi fs.FileInfo) (inodeInfo, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return inodeInfo{}, false
	}
	return inodeInfo{ino: uint64(st.Ino), nlink: uint64(st.Nlink), uid: st.Uid, ctime: statCtime(st)}, true
}
