// Package safeopen opens, for reading, a file someone other than hm may
// have put where hm looks (trigger files, hook notes, hm init's backups):
// never through a symbolic link, never blocking on a FIFO. What was opened
// is the caller's to check (f.Stat) before it reads: each caller has its
// own rule for what it accepts.
package safeopen

import (
	"os"
	"syscall"
)

// Open opens path read-only. It fails with an error wrapping syscall.ELOOP
// where path is a symbolic link, instead of following it, and returns at
// once where path is a FIFO with no writer.
func Open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
