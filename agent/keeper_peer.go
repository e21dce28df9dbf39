package agent

import "net"

// peerUID is the user id of the process at the other end of c
// (peerUIDOf: SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS).
func peerUID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, credErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { uid, credErr = peerUIDOf(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, credErr
}
