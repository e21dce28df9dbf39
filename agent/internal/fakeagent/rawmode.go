//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// makeRawFlush switches terminal fd to raw mode as a program that sets its
// terminal up late does, with TCSAFLUSH: input typed until then is thrown
// away. It returns that input, read just before the switch so that it can
// be logged (in cooked mode the kernel held and echoed it).
func makeRawFlush(fd int) ([]byte, error) {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	raw := *t
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	// First raw with reads that return at once, to collect what is pending
	// (a partial line in cooked mode becomes readable).
	peek := raw
	peek.Cc[unix.VMIN], peek.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &peek); err != nil {
		return nil, err
	}
	var lost []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		lost = append(lost, buf[:n]...)
	}
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	return lost, unix.IoctlSetTermios(fd, ioctlSetTermiosFlush, &raw)
}
