//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package agent

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes (tcgetattr).
const ioctlGetTermios = unix.TIOCGETA

// canonLineMax is the longest line, in bytes with its newline, that the
// terminal keeps in canonical mode (MAX_CANON): the kernel drops the bytes
// after it.
const canonLineMax = 1024

// ioctlInputQueue counts the bytes a terminal holds for its reader that it
// has not read yet (FIONREAD, _IOR('f', 127, int), which golang.org/x/sys/unix does not name); in canonical mode, complete lines only.
const ioctlInputQueue = 0x4004667f
