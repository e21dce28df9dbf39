package journal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"hm/internal/ground/atomicfile"
)

// KeyFileName is the ledger key's file name beside the database
// (runtime/ledger-key), the default Options.KeyPath.
const KeyFileName = "ledger-key"

// KeySize is the ledger key's length in bytes; the key file holds it as
// 2*KeySize hex characters (and an optional trailing newline).
const KeySize = 32

// ErrBadKey is wrapped by every refusal of a ledger key file: garbage, the
// wrong size, readable by others, not a regular file, or another user's.
// Nothing is written when it is returned.
var ErrBadKey = errors.New("journal: unusable ledger key")

// ErrNoKey means the ledger key file does not exist (read-only checks never
// create one).
var ErrNoKey = errors.New("journal: no ledger key")

// ledgerKey is the HMAC key of the hash chain and its short public id.
type ledgerKey struct {
	b  []byte
	id string
}

// newLedgerKey checks the length and computes the id.
func newLedgerKey(b []byte) (*ledgerKey, error) {
	if len(b) != KeySize {
		return nil, fmt.Errorf("%w: the key has %d bytes, want %d", ErrBadKey, len(b), KeySize)
	}
	return &ledgerKey{b: append([]byte(nil), b...), id: KeyID(b)}, nil
}

// KeyID is the fingerprint of a ledger key recorded in the ledger (kv
// ledger_key_id, ledger_key events, checkpoints) so Verify can tell rows
// made with another key from tampered ones: the first 16 hex characters of
// sha256("hm ledger key id\x00" || key). It reveals nothing usable about
// the key.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("hm ledger key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (k *ledgerKey) mac() hash.Hash { return hmac.New(sha256.New, k.b) }

// LoadKey reads the ledger key file at path: exactly 64 hex characters
// (optionally followed by one newline), a regular file of this user with
// no permission bits for group or others. ErrNoKey when it is absent,
// ErrBadKey (with the reason and the fix) for anything else wrong.
func LoadKey(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoKey, path)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger key: %w", err)
	}
	const fix = "restore the original key file, or move it aside so that a new key is made (the chain made with the old key then verifies as unverifiable)"
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file; %s", ErrBadKey, path, fix)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o and others may read it; chmod 600 it if nobody else could have read it, else %s", ErrBadKey, path, perm, fix)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%w: %s belongs to uid %d, not to this user; %s", ErrBadKey, path, sys.Uid, fix)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger key: %w", err)
	}
	text := strings.TrimSuffix(string(data), "\n")
	if len(text) != 2*KeySize {
		return nil, fmt.Errorf("%w: %s holds %d characters, want %d hex characters (a %d-byte key); %s", ErrBadKey, path, len(text), 2*KeySize, KeySize, fix)
	}
	key, err := hex.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not hex; %s", ErrBadKey, path, fix)
	}
	return key, nil
}

// EnsureKey returns the ledger key at path, creating a random one (mode
// 0600, parent directory 0700) when the file does not exist; created
// reports that. An existing unusable file is refused (ErrBadKey) and left
// as it is.
func EnsureKey(path string) (key []byte, created bool, err error) {
	key, err = LoadKey(path)
	if !errors.Is(err, ErrNoKey) {
		return key, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("ledger key: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("make ledger key: %w", err)
	}
	// WriteNew: two processes racing to create it cannot end with two keys.
	if err := atomicfile.WriteNew(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			key, err = LoadKey(path)
			return key, false, err
		}
		return nil, false, fmt.Errorf("write ledger key: %w", err)
	}
	return key, true, nil
}

// setupKey resolves Options.Key/KeyPath at Open: a writer loads or creates
// its key now; a read-only ledger waits until a check needs it.
func (l *Ledger) setupKey() error {
	if l.opts.KeyPath == "" {
		l.opts.KeyPath = filepath.Join(filepath.Dir(l.path), KeyFileName)
	}
	if l.opts.Key != nil {
		k, err := newLedgerKey(l.opts.Key)
		if err != nil {
			return err
		}
		l.key = k
		return nil
	}
	if l.opts.ReadOnly {
		return nil
	}
	b, created, err := EnsureKey(l.opts.KeyPath)
	if err != nil {
		return err
	}
	k, err := newLedgerKey(b)
	if err != nil {
		return err
	}
	l.key, l.keyCreated = k, created
	return nil
}

// ledgerKey returns the key, reading the key file on first use.
func (l *Ledger) ledgerKey() (*ledgerKey, error) {
	l.keyMu.Lock()
	defer l.keyMu.Unlock()
	if l.key != nil {
		return l.key, nil
	}
	b, err := LoadKey(l.opts.KeyPath)
	if err != nil {
		return nil, err
	}
	k, err := newLedgerKey(b)
	if err != nil {
		return nil, err
	}
	l.key = k
	return k, nil
}

// KeyID returns the fingerprint of the ledger's key (loading it if
// needed).
func (l *Ledger) KeyID() (string, error) {
	k, err := l.ledgerKey()
	if err != nil {
		return "", err
	}
	return k.id, nil
}
