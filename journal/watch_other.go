//go:build !linux

package journal

import "errors"

// dirNotifier is not implemented here: the ledger polls its files.
type dirNotifier struct{}

func newDirNotifier(string) (*dirNotifier, error) {
	return nil, errors.New("no directory notification on this system")
}

func (*dirNotifier) wait() error { return errors.New("no directory notification") }

func (*dirNotifier) close() {}
