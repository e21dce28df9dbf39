//go:build linux

package triggers

import (
	"syscall"
	"time"
)

// statCtime is the inode change time (Linux names it Ctim).
func statCtime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()) }
