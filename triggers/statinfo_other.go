//go:build !linux

package triggers

import (
	"syscall"
	"time"
)

// statCtime is the inode change time (darwin and the BSDs name it Ctimespec).
func statCtime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctimespec.Unix()) }
