//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package agent

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes (tcgetattr).
const ioctlGetTermios = unix.TIOCGETA
