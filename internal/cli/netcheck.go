package cli

import (
	"net"
	"strconv"
)

// listenCheck reports whether the port can be bound on loopback; the
// returned func releases it.
func listenCheck(port int) (func(), error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return func() { ln.Close() }, nil
}
