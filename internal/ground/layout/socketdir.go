package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// SocketPathMax is the longest path a unix socket binds to on every
// system hm runs on: sun_path holds 104 bytes on macOS (108 on Linux),
// the closing NUL included. A longer path fails to bind and to connect
// (EINVAL).
const SocketPathMax = 103

// shortSocketBase is where the socket of a root too deep for
// SocketPathMax goes: a fixed directory, so that every hub of the root
// finds it whatever its environment.
const shortSocketBase = "/tmp"

// PaneHostSocketName is the file name of the root's pane host's socket
// in PaneSocketDir (agent.HostSocket).
const PaneHostSocketName = "host.sock"

// PaneSocketDir is the directory in which the root's pane host listens,
// as <dir>/host.sock (PaneHostSocketName): PaneLogs where that path fits
// a unix socket address; else, for a root deep enough that it does not,
// /tmp/hm-<uid>/<the root's hash>, a directory of this user's alone
// (created 0700; refused when it is a link, another user's, or open to
// others).
func (l Layout) PaneSocketDir() (string, error) {
	if len(filepath.Join(l.PaneLogs(), PaneHostSocketName)) <= SocketPathMax {
		return l.PaneLogs(), nil
	}
	dir := l.ShortPaneSocketDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := ownDir(d); err != nil {
			return "", fmt.Errorf("the pane host's socket directory for a root this deep: %w", err)
		}
	}
	return dir, nil
}

// ShortPaneSocketDir is where PaneSocketDir puts the pane host's socket
// of a root too deep for PaneLogs: /tmp/hm-<uid>/<the root's hash>.
func (l Layout) ShortPaneSocketDir() string {
	sum := sha256.Sum256([]byte(l.Root))
	return filepath.Join(shortSocketBase, "hm-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8]))
}

// ownDir creates d (0700) unless it exists, and fails unless it is a
// directory (not a link) of this user's that no one else may enter.
func ownDir(d string) error {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	return private(d, st, "enter")
}
