package layout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"hm/internal/ground/atomicfile"
)

// MinTokenBytes is the shortest operator secret a hub accepts.
const MinTokenBytes = 32

// ErrWeakToken is wrapped by EnsureToken's refusals of an existing secret.
var ErrWeakToken = errors.New("the operator token is not safe to use")

// EnsureToken returns the operator secret, creating a random one (0600) if
// there is none. An existing secret shorter than MinTokenBytes, readable or
// writable by anyone but its owner, or owned by another user is refused
// (wrapping ErrWeakToken) with the fix: `hm token rotate`.
func (l Layout) EnsureToken() (string, error) {
	return l.ensureSecret(l.Token(), "run `hm token rotate` for a new secret (mode 0600)")
}

// PaneSecret is the secret a hub and its panes' keepers prove themselves
// with (agent.Keeper.Secret): runtime/pane-secret, 0600.
func (l Layout) PaneSecret() string { return filepath.Join(l.Runtime(), "pane-secret") }

// EnsurePaneSecret returns the pane secret, creating a random one if there
// is none, refused as EnsureToken refuses a weak token; the fix is to
// delete the file (keepers started with the old one are then not adopted).
func (l Layout) EnsurePaneSecret() (string, error) {
	return l.ensureSecret(l.PaneSecret(), "delete it for a new one (running panes are then not adopted by the next hub)")
}

// ensureSecret returns the secret in path, creating a random one if there
// is none; one that is weak (see EnsureToken) is refused with fix.
func (l Layout) ensureSecret(path, fix string) (string, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l.writeSecret(path)
	}
	if err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file; %s", ErrWeakToken, path, fix)
	}
	if err := private(path, st, "read"); err != nil {
		return "", fmt.Errorf("%w: %v; %s", ErrWeakToken, err, fix)
	}
	tok, err := readSecret(path)
	if err != nil {
		return "", err
	}
	if len(tok) < MinTokenBytes {
		return "", fmt.Errorf("%w: %s holds %d bytes, fewer than %d; %s", ErrWeakToken, path, len(tok), MinTokenBytes, fix)
	}
	return tok, nil
}

// private fails unless path, whose Lstat is st, is this user's and no one
// else may use it as what ("read" a file, "enter" a directory).
func private(path string, st fs.FileInfo, what string) error {
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o and others may %s it", path, perm, what)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user", path, sys.Uid)
	}
	return nil
}

// RotateToken replaces the operator secret with a new random one (64 hex
// characters, mode 0600) and returns it.
func (l Layout) RotateToken() (string, error) { return l.writeSecret(l.Token()) }

// writeSecret writes a new random secret (64 hex characters, mode 0600)
// to path and returns it.
func (l Layout) writeSecret(path string) (string, error) {
	if err := os.MkdirAll(l.Runtime(), 0o700); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make secret: %w", err)
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tok, nil
}

// ReadToken reads the operator secret.
func (l Layout) ReadToken() (string, error) { return readSecret(l.Token()) }

// readSecret reads the secret in path.
func readSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(data)), nil
}
