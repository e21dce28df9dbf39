//go:build unix && !(darwin || freebsd || netbsd || openbsd || dragonfly)

package agent

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes (tcgetattr).
const ioctlGetTermios = unix.TCGETS

// canonLineMax is the longest line, in bytes with its newline, that the
// terminal keeps in canonical mode (Linux's N_TTY_BUF_SIZE less one): the
// kernel drops the bytes after it but still echoes them.
const canonLineMax = 4095

// ioctlInputQueue counts the bytes a terminal holds for its reader that it
// has not read yet (TIOCINQ); in canonical mode, complete lines only.
const ioctlInputQueue = unix.TIOCINQ
