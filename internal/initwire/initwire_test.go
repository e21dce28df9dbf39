package initwire

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hm/internal/ground/layout"
)

func write(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRun(t *testing.T, root string, opts Options, undo bool) string {
	t.Helper()
	out, errText := run(t, root, opts, undo)
	if errText != "" {
		t.Fatalf("hm init (undo %v): %s", undo, errText)
	}
	return out
}

func TestParseAgents(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", Agents, false},
		{"gemini,claude", []string{"claude", "gemini"}, false},
		{" Codex , codex", []string{"codex"}, false},
		{"claude,cursor", nil, true},
		{"claude,", nil, true},
	}
	for _, tc := range tests {
		got, err := ParseAgents(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseAgents(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// --agents wires only those CLIs, and undo with --agents undoes only them.
func TestAgentsSubset(t *testing.T) {
	root := t.TempDir()
	mustRun(t, root, Options{Agents: []string{"codex"}}, false)
	tree := files(snapshot(t, root))
	for _, p := range []string{".codex/config.toml", ".codex/hooks.json", "AGENTS.md"} {
		if _, ok := tree[p]; !ok {
			t.Errorf("%s missing", p)
		}
	}
	for _, p := range []string{".mcp.json", "CLAUDE.md", ".gemini/settings.json"} {
		if _, ok := tree[p]; ok {
			t.Errorf("%s written for --agents codex", p)
		}
	}
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	mustRun(t, root, Options{Agents: []string{"codex"}}, true)
	tree = files(snapshot(t, root))
	if _, ok := tree["AGENTS.md"]; ok {
		t.Error("undo --agents codex left AGENTS.md")
	}
	if _, ok := tree["CLAUDE.md"]; !ok {
		t.Error("undo --agents codex removed CLAUDE.md")
	}
	if _, ok := tree[".squidrun/init.json"]; !ok {
		t.Error("manifest removed while claude is still wired")
	}
	mustRun(t, root, Options{}, true)
	if left := snapshot(t, root); len(left) != 0 {
		t.Errorf("after the last undo: %v", files(left))
	}
}

// The backup is the file before hm init first changed it, whatever later
// runs do.
func TestBackupKeepsTheOriginal(t *testing.T) {
	root := t.TempDir()
	write(t, root, "CLAUDE.md", "original\n")
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	// The person drops hm's block; the next run puts it back and keeps the
	// first backup.
	write(t, root, "CLAUDE.md", "original\nand mine\n")
	out := mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	if !strings.Contains(out, "changed   CLAUDE.md: instructions block (backup CLAUDE.md.hm.bak)") {
		t.Errorf("second run said:\n%s", out)
	}
	if got := read(t, root, "CLAUDE.md.hm.bak"); got != "original\n" {
		t.Errorf("backup is %q", got)
	}
}

// Undo never loses an edit made after hm init: the edited file is kept as
// .hm.undo, for a file hm init changed and for one it created.
func TestUndoKeepsLaterEdits(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".mcp.json", "{\"mcpServers\": {}}\n")
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	write(t, root, ".mcp.json", read(t, root, ".mcp.json")+"\n")
	write(t, root, "CLAUDE.md", read(t, root, "CLAUDE.md")+"my notes\n")
	out := mustRun(t, root, Options{Agents: []string{"claude"}}, true)
	for _, want := range []string{
		"kept     .mcp.json as .mcp.json.hm.undo", "restored .mcp.json from .mcp.json.hm.bak",
		"kept     CLAUDE.md as CLAUDE.md.hm.undo", "removed  .claude/settings.json (hm init created it)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("undo output lacks %q:\n%s", want, out)
		}
	}
	if got := read(t, root, ".mcp.json"); got != "{\"mcpServers\": {}}\n" {
		t.Errorf(".mcp.json restored as %q", got)
	}
	if got := read(t, root, "CLAUDE.md.hm.undo"); !strings.HasSuffix(got, "my notes\n") {
		t.Errorf("CLAUDE.md.hm.undo is %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "CLAUDE.md")); !os.IsNotExist(err) {
		t.Errorf("CLAUDE.md still there: %v", err)
	}
	// A second undo has nothing left to do.
	if out := mustRun(t, root, Options{Agents: []string{"claude"}}, true); !strings.Contains(out, "nothing to undo") {
		t.Errorf("second undo:\n%s", out)
	}
}

// Undo works from the backups alone when .squidrun/init.json is gone.
func TestUndoWithoutManifest(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".claude/settings.json", "{}\n")
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	if err := os.RemoveAll(filepath.Join(root, ".squidrun")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, root, Options{Agents: []string{"claude"}}, true)
	if got := read(t, root, ".claude/settings.json"); got != "{}\n" {
		t.Errorf("settings.json is %q", got)
	}
}

// A file reached through a symlink is edited where it is, once, and the
// link stays a link; a link out of the root is refused.
func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "AGENTS.md", "# shared\n")
	if err := os.Symlink("AGENTS.md", filepath.Join(root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, root, Options{Agents: []string{"claude", "codex"}}, false)
	if strings.Count(out, "AGENTS.md: instructions block") != 1 || strings.Contains(out, "CLAUDE.md") {
		t.Errorf("output:\n%s", out)
	}
	if target, err := os.Readlink(filepath.Join(root, "CLAUDE.md")); err != nil || target != "AGENTS.md" {
		t.Errorf("CLAUDE.md is no longer the link: %q %v", target, err)
	}
	if got := read(t, root, "AGENTS.md"); strings.Count(got, BeginMarker) != 1 || !strings.HasPrefix(got, "# shared\n") {
		t.Errorf("AGENTS.md:\n%s", got)
	}
	mustRun(t, root, Options{}, true)
	if got := read(t, root, "CLAUDE.md"); got != "# shared\n" {
		t.Errorf("after undo: %q", got)
	}

	outside := t.TempDir()
	write(t, outside, "GEMINI.md", "elsewhere\n")
	if err := os.Symlink(filepath.Join(outside, "GEMINI.md"), filepath.Join(root, "GEMINI.md")); err != nil {
		t.Fatal(err)
	}
	_, errText := run(t, root, Options{}, false)
	if !strings.Contains(errText, "GEMINI.md: a symlink to") || !strings.Contains(errText, "outside the root") {
		t.Errorf("error: %q", errText)
	}
	if got := read(t, outside, "GEMINI.md"); got != "elsewhere\n" {
		t.Errorf("the outside file changed: %q", got)
	}
}

// New files are 0644 and directories 0755 (they belong in the repository);
// a file's mode is kept, and its backup has the same.
func TestModes(t *testing.T) {
	root := t.TempDir()
	write(t, root, "GEMINI.md", "x\n")
	if err := os.Chmod(filepath.Join(root, "GEMINI.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, root, Options{Agents: []string{"gemini"}}, false)
	for rel, want := range map[string]os.FileMode{
		"GEMINI.md": 0o600, "GEMINI.md.hm.bak": 0o600, ".gemini": 0o755, ".gemini/settings.json": 0o644, ".squidrun": 0o700, ".squidrun/init.json": 0o600,
	} {
		st, err := os.Stat(filepath.Join(root, rel))
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", rel, st.Mode().Perm(), err, want)
		}
	}
}

// The instructions never hold a marker line of their own, which would
// break the block they are in.
func TestInstructionsHaveNoMarkers(t *testing.T) {
	for _, l := range strings.Split(InstructionsBody, "\n") {
		if s := strings.TrimSpace(l); s == BeginMarker || s == EndMarker {
			t.Fatalf("InstructionsBody has a marker line: %q", l)
		}
	}
}

// hm init creates .squidrun/.gitignore when there is none, reports one
// that is not hm's, and its undo removes it only with the .squidrun/ it
// made (issue #33).
func TestGitIgnore(t *testing.T) {
	lay := func(root string) layout.Layout { return layout.Layout{Root: root} }
	tests := []struct {
		name          string
		before, after func(t *testing.T, root string) // before hm init; between it and undo
		want, note    string                          // in hm init's output, every run
		kept          string                          // the .gitignore after undo ("" gone)
	}{
		{name: "none", want: "created   .squidrun/.gitignore: keeps runtime/"},
		{name: "hm up ran first", before: ensure, kept: layout.GitIgnore},
		{name: "hm up ran after", after: ensure, want: "created   .squidrun/.gitignore", kept: layout.GitIgnore},
		{name: "a person's own", before: func(t *testing.T, root string) {
			write(t, root, ".squidrun/.gitignore", "runtime/\n")
		}, note: "note: .squidrun/.gitignore is not the one hm writes", kept: "runtime/\n"},
		{name: "a symlink", before: func(t *testing.T, root string) {
			write(t, root, "mine", "runtime/\n")
			mkdir(t, lay(root).State())
			symlink(t, "../mine", lay(root).GitIgnorePath())
		}, note: "note: .squidrun/.gitignore is a symlink to ../mine, not a file hm init wrote", kept: "runtime/\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.before != nil {
				tc.before(t, root)
			}
			for i := range 2 {
				out := mustRun(t, root, Options{Agents: []string{"gemini"}}, false)
				want := tc.want
				if i == 1 {
					want = "already wired: nothing changed"
				}
				if !strings.Contains(out, want) || !strings.Contains(out, tc.note) {
					t.Errorf("run %d said:\n%s", i+1, out)
				}
			}
			if tc.note == "" && !layout.HasGitIgnoreRules([]byte(read(t, root, ".squidrun/.gitignore"))) {
				t.Errorf(".gitignore is %q", read(t, root, ".squidrun/.gitignore"))
			}
			if tc.after != nil {
				tc.after(t, root)
			}
			mustRun(t, root, Options{Agents: []string{"gemini"}}, true)
			got, err := os.ReadFile(lay(root).GitIgnorePath())
			if tc.kept == "" && !os.IsNotExist(err) || tc.kept != "" && string(got) != tc.kept {
				t.Errorf("after undo: %q %v, want %q", got, err, tc.kept)
			}
		})
	}
}

func ensure(t *testing.T, root string) {
	t.Helper()
	if err := (layout.Layout{Root: root}).Ensure(); err != nil {
		t.Fatal(err)
	}
}
