package layout

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEnsureFollowsNoLinks: a cloned repository may ship .squidrun, one of
// its directories, or a file hm writes in runtime/ as a symbolic link out
// of the root. Ensure (hm up) and EnsureTriggers (hm-send's fallback)
// refuse, naming the link, and leave the outside untouched. Before, hm up
// created its tree through the link, chmod-ed the outside directory to
// 0700 and would have put the ledger and the token there.
func TestEnsureFollowsNoLinks(t *testing.T) {
	tests := []struct {
		name string
		// plant makes the hostile entry; outside is a directory out of the root.
		plant  func(t *testing.T, root, outside string)
		ensure func(l Layout) error
	}{
		{".squidrun is a link", func(t *testing.T, root, outside string) {
			link(t, outside, filepath.Join(root, Dir))
		}, Layout.Ensure},
		{".squidrun is a link (hm-send fallback)", func(t *testing.T, root, outside string) {
			link(t, outside, filepath.Join(root, Dir))
		}, Layout.EnsureTriggers},
		{"runtime is a link", func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, Dir))
			link(t, outside, filepath.Join(root, Dir, "runtime"))
		}, Layout.Ensure},
		{"triggers is a link (hm-send fallback)", func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, Dir))
			link(t, outside, filepath.Join(root, Dir, "triggers"))
		}, Layout.EnsureTriggers},
		{"the ledger is a link", func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, Dir, "runtime"))
			link(t, filepath.Join(outside, "ledger.db"), filepath.Join(root, Dir, "runtime", "evidence-ledger.db"))
		}, Layout.Ensure},
		{"a pane log is a link", func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, Dir, "runtime", "panes"))
			link(t, filepath.Join(outside, "x.log"), filepath.Join(root, Dir, "runtime", "panes", "architect.log"))
		}, Layout.Ensure},
		{"handoffs is a file", func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, Dir))
			if err := os.WriteFile(filepath.Join(root, Dir, "handoffs"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, Layout.Ensure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			if err := os.Chmod(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, root, outside)
			err := tc.ensure(Layout{Root: root})
			if !errors.Is(err, ErrOutsideRoot) {
				t.Fatalf("ensure = %v, want a refusal (ErrOutsideRoot)", err)
			}
			des, _ := os.ReadDir(outside)
			if len(des) != 0 {
				t.Errorf("wrote outside the root: %v", des)
			}
			if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o755 {
				t.Errorf("outside directory's mode changed to %v", fi.Mode().Perm())
			}
		})
	}
	t.Run("a plain tree is fine", func(t *testing.T) {
		l := Layout{Root: t.TempDir()}
		if err := l.Ensure(); err != nil {
			t.Fatal(err)
		}
		if err := l.Ensure(); err != nil {
			t.Fatalf("second Ensure: %v", err)
		}
		if _, err := os.Stat(l.GitIgnorePath()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("hm-send's fallback writes the .gitignore", func(t *testing.T) {
		l := Layout{Root: t.TempDir()}
		if err := l.EnsureTriggers(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(l.GitIgnorePath()); err != nil {
			t.Fatalf("no .squidrun/.gitignore after the fallback made .squidrun: %v", err)
		}
	})
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}
