package layout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPaneSocketDir: the pane host's socket stays under runtime/panes
// where its path fits a unix socket address, and goes to the root's own
// directory under /tmp/hm-<uid> where it does not; that directory is
// refused when it is a link or open to others.
func TestPaneSocketDir(t *testing.T) {
	t.Parallel()
	short := Layout{Root: t.TempDir()}
	if dir, err := short.PaneSocketDir(); err != nil || dir != short.PaneLogs() {
		t.Errorf("a shallow root: %q, %v; want %s", dir, err, short.PaneLogs())
	}
	deep := Layout{Root: filepath.Join(t.TempDir(), strings.Repeat("d", 90))}
	dir, err := deep.PaneSocketDir()
	if err != nil || dir != deep.ShortPaneSocketDir() || len(filepath.Join(dir, PaneHostSocketName)) > SocketPathMax {
		t.Fatalf("a deep root: %q, %v; want %s, short enough", dir, err, deep.ShortPaneSocketDir())
	}
	t.Cleanup(func() { os.Remove(dir) })
	if st, err := os.Lstat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory of mode 0700", dir, st, err)
	}

	for _, tc := range []struct {
		name string
		make func(path string) error
	}{
		{"open to others", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"a link", func(p string) error { return os.Symlink(t.TempDir(), p) }},
		{"a file", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
	} {
		p := filepath.Join(t.TempDir(), "sockets")
		if err := tc.make(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil && tc.name == "open to others" {
			t.Fatal(err)
		}
		if err := ownDir(p); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
