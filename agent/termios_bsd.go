//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package agent

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes (tcgetattr).
const ioctlGetTermios = unix.TIOCGETA

// canonLineMax is the longest line, in bytes with its newline, that the
// terminal keeps in canonical mode (MAX_CANON): the kernel drops the bytes
// after it.
const canonLineMax = 1024
