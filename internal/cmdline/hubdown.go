package cmdline

import (
	"errors"
	"fmt"
	"net"
)

// noHubError is every client command's answer when no hub listens where
// it looked: it says so and names `hm up`, the next step.
type noHubError struct {
	port int
	root string // "" when the caller does not know it
	err  error  // the dial error
}

func (e *noHubError) Error() string {
	where := fmt.Sprintf("on 127.0.0.1:%d", e.port)
	if e.root != "" {
		where += " for " + e.root
	}
	cause := e.err.Error()
	var op *net.OpError
	if errors.As(e.err, &op) {
		cause = op.Error() // "dial tcp …: connect: connection refused", without the wrappers
	}
	return fmt.Sprintf("no hub is running %s; start it with `hm up` (%s)", where, cause)
}

func (e *noHubError) Unwrap() error { return e.err }

// HubError is err from reaching the hub on port (for root, "" when not
// known): a noHubError when nothing accepted the connection there, else
// err itself.
func HubError(port int, root string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &noHubError{port: port, root: root, err: err}
	}
	return err
}
