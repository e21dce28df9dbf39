package initwire

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secret is what a file outside the repository holds: it must never reach
// a file inside it.
const secret = "outside-credential-7c1f\n"

// hostileCases are repositories (as cloned, and as changed after hm init
// wired them) that try to make hm init or its undo read or write outside
// the root (issue #33): symlinked, hard-linked and FIFO backups, and
// manifests naming paths outside the root or through links.
var hostileCases = []struct {
	name string
	// clone lays out the repository in root; outside is a directory beside
	// it holding the file "secret" and the empty directory "emptydir".
	clone func(t *testing.T, root, outside string)
	// tamper changes the repository after hm init ran (nil: nothing).
	tamper           func(t *testing.T, root, outside string)
	initErr, undoErr string // "" when the step must succeed
	local            bool   // hm init --local
}{
	{
		name: "backup shipped as a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "AGENTS.md", "# ours\n")
			symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "AGENTS.md.hm.bak"))
		},
		initErr: "AGENTS.md.hm.bak is a symlink to ",
		undoErr: "AGENTS.md.hm.bak is a symlink to ",
	},
	{
		name: "backup replaced by a symlink after init",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "AGENTS.md", "# ours\n")
		},
		tamper: func(t *testing.T, root, outside string) {
			replace(t, filepath.Join(root, "AGENTS.md.hm.bak"), func(p string) error { return os.Symlink(filepath.Join(outside, "secret"), p) })
		},
		undoErr: "AGENTS.md.hm.bak is a symlink to ",
	},
	{
		name: "backup replaced by a hard link after init",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "CLAUDE.md", "# ours\n")
		},
		tamper: func(t *testing.T, root, outside string) {
			replace(t, filepath.Join(root, "CLAUDE.md.hm.bak"), func(p string) error { return os.Link(filepath.Join(outside, "secret"), p) })
		},
		undoErr: "CLAUDE.md.hm.bak is a file with 2 hard links",
	},
	{
		name: "backup replaced by a named pipe after init",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "GEMINI.md", "# ours\n")
		},
		tamper: func(t *testing.T, root, outside string) {
			replace(t, filepath.Join(root, "GEMINI.md.hm.bak"), func(p string) error { return syscall.Mkfifo(p, 0o600) })
		},
		undoErr: "GEMINI.md.hm.bak is a named pipe",
	},
	{
		name: "backup of a file in a symlinked directory",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "conf/settings.json", "{}\n")
			symlink(t, "conf", filepath.Join(root, ".gemini"))
			symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "conf/settings.json.hm.bak"))
		},
		initErr: "conf/settings.json.hm.bak is a symlink to ",
		undoErr: "conf/settings.json.hm.bak is a symlink to ",
	},
	{
		name:    "manifest dirs entry outside the root",
		clone:   withManifest(`{"dirs": ["../outside/emptydir"], "written": {}}`),
		initErr: `.squidrun/init.json: "../outside/emptydir" under "dirs" is not a path hm init creates`,
		undoErr: `.squidrun/init.json: "../outside/emptydir" under "dirs" is not a path hm init creates`,
	},
	{
		name: "manifest dirs entry with an absolute path",
		clone: func(t *testing.T, root, outside string) {
			withManifest(`{"dirs": ["`+filepath.Join(outside, "emptydir")+`"]}`)(t, root, outside)
		},
		initErr: `under "dirs" is not a path hm init creates`,
		undoErr: `under "dirs" is not a path hm init creates`,
	},
	{
		name:    "manifest paths not clean",
		clone:   withManifest(`{"created": ["./CLAUDE.md"], "dirs": [".codex/"], "written": {"AGENTS.md/../AGENTS.md": "x"}}`),
		initErr: `"./CLAUDE.md" under "created" is not a path hm init creates`,
		undoErr: `"AGENTS.md/../AGENTS.md" under "written" is not a path hm init creates`,
	},
	{
		name:    "manifest created entry outside the root",
		clone:   withManifest(`{"created": ["../outside/secret"], "written": {"../outside/secret": "x"}}`),
		initErr: `"../outside/secret" under "written" is not a path hm init creates`,
		undoErr: `"../outside/secret" under "created" is not a path hm init creates`,
	},
	{
		name: "manifest dirs entry through a symlinked directory",
		clone: func(t *testing.T, root, outside string) {
			symlink(t, filepath.Join(outside, "emptydir"), filepath.Join(root, ".codex"))
			withManifest(`{"dirs": [".codex"]}`)(t, root, outside)
		},
		initErr: `".codex" under "dirs": .codex is a symlink`,
		undoErr: `".codex" under "dirs": .codex is a symlink`,
	},
	{
		name: "manifest is a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			write(t, outside, "init.json", `{"dirs": ["../outside/emptydir"]}`)
			mkdir(t, filepath.Join(root, ".squidrun"))
			symlink(t, filepath.Join(outside, "init.json"), filepath.Join(root, ".squidrun/init.json"))
		},
		initErr: ".squidrun/init.json is a symlink to ",
		undoErr: ".squidrun/init.json is a symlink to ",
	},
	{
		name: ".squidrun is a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			symlink(t, filepath.Join(outside, "emptydir"), filepath.Join(root, ".squidrun"))
		},
		initErr: ".squidrun/init.json: .squidrun is a symlink, not a directory",
		undoErr: ".squidrun/init.json: .squidrun is a symlink, not a directory",
	},
	{
		name: "per-user settings a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, ".git", "info"))
			mkdir(t, filepath.Join(root, ".claude"))
			symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, ".claude/settings.local.json"))
		},
		initErr: ".claude/settings.local.json: a symlink to ",
		local:   true,
	},
	{
		name: "git's info directory a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			mkdir(t, filepath.Join(root, ".git"))
			symlink(t, filepath.Join(outside, "emptydir"), filepath.Join(root, ".git", "info"))
		},
		initErr: ".git/info/exclude: a symlink to ",
		local:   true,
	},
	{
		name: "CLAUDE.local.md backup shipped as a symlink out of the root",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, "CLAUDE.local.md", "# mine\n")
			symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "CLAUDE.local.md.hm.bak"))
		},
		initErr: "CLAUDE.local.md.hm.bak is a symlink to ",
		undoErr: "CLAUDE.local.md.hm.bak is a symlink to ",
		local:   true,
	},
	{
		name: "manifest names a per-user file through a symlinked directory",
		clone: func(t *testing.T, root, outside string) {
			symlink(t, filepath.Join(outside, "emptydir"), filepath.Join(root, ".claude"))
			withManifest(`{"created": [".claude/settings.local.json"]}`)(t, root, outside)
		},
		initErr: `".claude/settings.local.json" under "created": .claude is a symlink, not a directory`,
		undoErr: `".claude/settings.local.json" under "created": .claude is a symlink, not a directory`,
		local:   true,
	},
	{
		name: ".mcp.json with a byte order mark",
		clone: func(t *testing.T, root, outside string) {
			write(t, root, ".mcp.json", "\ufeff{\"mcpServers\": {}}\n")
		},
	},
}

// TestHostileRepositories runs hm init, then the tampering, then hm init
// --undo on each hostile repository: no step changes anything outside the
// root, no file in the root ever holds the outside file's bytes, and a
// refused step changes nothing at all.
func TestHostileRepositories(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			root, outside := repoBeside(t)
			c.clone(t, root, outside)
			outsideBefore := snapshot(t, outside)

			step := func(what string, undo bool, wantErr string) {
				t.Helper()
				before := snapshot(t, root)
				_, errText := run(t, root, Options{Local: c.local}, undo)
				switch {
				case wantErr == "" && errText != "":
					t.Fatalf("%s: %s", what, errText)
				case wantErr != "" && !strings.Contains(errText, wantErr):
					t.Fatalf("%s: error %q, want it to contain %q", what, errText, wantErr)
				case wantErr != "" && !strings.Contains(errText, "changed nothing"):
					t.Errorf("%s: error %q does not say that nothing changed", what, errText)
				case wantErr != "":
					if after := snapshot(t, root); !sameTree(before, after) {
						t.Errorf("%s was refused but changed the tree:\n%s", what, diffTrees(files(before), files(after)))
					}
				}
				if after := snapshot(t, outside); !sameTree(outsideBefore, after) {
					t.Fatalf("%s changed the directory outside the root:\n%s", what, diffTrees(files(outsideBefore), files(after)))
				}
				for rel, e := range snapshot(t, root) {
					if e.kind == 'f' && strings.Contains(e.data, secret) && before[rel].data != e.data {
						t.Fatalf("%s put the outside file's bytes into %s", what, rel)
					}
				}
			}
			step("hm init", false, c.initErr)
			if c.tamper != nil {
				c.tamper(t, root, outside)
			}
			step("hm init --undo", true, c.undoErr)
		})
	}
}

// The byte order mark survives hm init and undo.
func TestByteOrderMarkKept(t *testing.T) {
	root := t.TempDir()
	const orig = "\ufeff{\"mcpServers\": {}}\n"
	write(t, root, ".mcp.json", orig)
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	if got := read(t, root, ".mcp.json"); !strings.HasPrefix(got, "\ufeff{") || !strings.Contains(got, `"hm"`) {
		t.Errorf(".mcp.json after hm init: %q", got)
	}
	mustRun(t, root, Options{Agents: []string{"claude"}}, true)
	if got := read(t, root, ".mcp.json"); got != orig {
		t.Errorf(".mcp.json after undo: %q", got)
	}
}

// repoBeside makes an empty repository root and, beside it, a directory
// outside it holding the file "secret" and the empty directory
// "emptydir".
func repoBeside(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "repo"), filepath.Join(base, "outside")
	mkdir(t, root)
	mkdir(t, filepath.Join(outside, "emptydir"))
	write(t, outside, "secret", secret)
	return root, outside
}

func withManifest(text string) func(*testing.T, string, string) {
	return func(t *testing.T, root, _ string) {
		write(t, root, ".squidrun/init.json", text)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// replace puts what make creates at p in place of the file there.
func replace(t *testing.T, p string, make func(string) error) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatalf("no file to replace: %v", err)
	}
	if err := make(p); err != nil {
		t.Fatal(err)
	}
}
