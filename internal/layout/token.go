package layout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"hm/internal/atomicfile"
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
	st, err := os.Lstat(l.Token())
	if errors.Is(err, fs.ErrNotExist) {
		return l.RotateToken()
	}
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file; run `hm token rotate`", ErrWeakToken, l.Token())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%w: %s has mode %04o and others may read it; run `hm token rotate` for a new secret (mode 0600)", ErrWeakToken, l.Token(), perm)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", fmt.Errorf("%w: %s belongs to uid %d, not to this user; run `hm token rotate`", ErrWeakToken, l.Token(), sys.Uid)
	}
	tok, err := l.ReadToken()
	if err != nil {
		return "", err
	}
	if len(tok) < MinTokenBytes {
		return "", fmt.Errorf("%w: %s holds %d bytes, fewer than %d; run `hm token rotate`", ErrWeakToken, l.Token(), len(tok), MinTokenBytes)
	}
	return tok, nil
}

// RotateToken replaces the operator secret with a new random one (64 hex
// characters, mode 0600) and returns it.
func (l Layout) RotateToken() (string, error) {
	if err := os.MkdirAll(l.Runtime(), 0o700); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteFile(l.Token(), []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return tok, nil
}

// ReadToken reads the operator secret.
func (l Layout) ReadToken() (string, error) {
	data, err := os.ReadFile(l.Token())
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
