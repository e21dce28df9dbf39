package layout

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestEnsureTokenRefusesWeak: an existing secret that is short, readable by
// others, or not a regular file is refused with the fix named, never used
// (before, a one-character hub-token was accepted and a 0644 one silently
// chmodded). A missing one is made; a good one is kept.
func TestEnsureTokenRefusesWeak(t *testing.T) {
	good := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		setup   func(l Layout) error
		wantErr string
	}{
		{"missing", func(Layout) error { return nil }, ""},
		{"good", func(l Layout) error { return os.WriteFile(l.Token(), []byte(good+"\n"), 0o600) }, ""},
		{"one character", func(l Layout) error { return os.WriteFile(l.Token(), []byte("x\n"), 0o600) }, "fewer than 32"},
		{"31 bytes", func(l Layout) error { return os.WriteFile(l.Token(), []byte(strings.Repeat("z", 31)), 0o600) }, "fewer than 32"},
		{"empty", func(l Layout) error { return os.WriteFile(l.Token(), nil, 0o600) }, "fewer than 32"},
		{"world readable", func(l Layout) error { return writeMode(l.Token(), good, 0o644) }, "others may read it"},
		{"group readable", func(l Layout) error { return writeMode(l.Token(), good, 0o640) }, "others may read it"},
		{"a directory", func(l Layout) error { return os.Mkdir(l.Token(), 0o700) }, "not a regular file"},
		{"a symlink", func(l Layout) error {
			if err := writeMode(l.Token()+".real", good, 0o600); err != nil {
				return err
			}
			return os.Symlink(l.Token()+".real", l.Token())
		}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			if err := l.Ensure(); err != nil {
				t.Fatal(err)
			}
			if err := tt.setup(l); err != nil {
				t.Fatal(err)
			}
			tok, err := l.EnsureToken()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrWeakToken) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "hm token rotate") {
					t.Fatalf("EnsureToken() = %q, %v; want ErrWeakToken mentioning %q and the fix", tok, err, tt.wantErr)
				}
				return
			}
			if err != nil || len(tok) < MinTokenBytes {
				t.Fatalf("EnsureToken() = %q, %v", tok, err)
			}
			if again, err := l.EnsureToken(); err != nil || again != tok {
				t.Fatalf("second EnsureToken() = %q, %v; want %q", again, err, tok)
			}
		})
	}
}

func TestRotateToken(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := writeMode(l.Token(), "x", 0o644); err == nil {
		t.Fatal("runtime/ should not exist yet")
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := writeMode(l.Token(), "x", 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := l.RotateToken()
	if err != nil || len(tok) != 64 {
		t.Fatalf("RotateToken() = %q, %v", tok, err)
	}
	st, err := os.Stat(l.Token())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token mode after rotate: %v, %v", st.Mode(), err)
	}
	if got, err := l.EnsureToken(); err != nil || got != tok {
		t.Fatalf("EnsureToken after rotate = %q, %v", got, err)
	}
	if again, _ := l.RotateToken(); again == tok {
		t.Fatal("RotateToken returned the same secret twice")
	}
}

func writeMode(path, data string, mode os.FileMode) error {
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
