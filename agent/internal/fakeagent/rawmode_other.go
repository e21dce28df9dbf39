//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import "golang.org/x/term"

// makeRawFlush is raw mode without the flush where termios ioctls differ.
func makeRawFlush(fd int) ([]byte, error) {
	_, err := term.MakeRaw(fd)
	return nil, err
}
