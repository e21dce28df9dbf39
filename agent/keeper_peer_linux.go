package agent

import "golang.org/x/sys/unix"

// peerUIDOf reads the peer's user id of socket fd (SO_PEERCRED).
func peerUIDOf(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
