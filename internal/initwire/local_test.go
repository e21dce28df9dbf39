package initwire

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRun runs git in dir, failing the test with its output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s (git is needed for this test)", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestLocalWiresOnlyUntrackedFiles: hm init --local in a real git clone
// writes Claude Code's per-user files, which git then ignores, touches no
// file the repository commits, says what it leaves out for Codex and
// Gemini CLI, changes nothing on a second run, and --local --undo gives
// the tree back byte for byte.
func TestLocalWiresOnlyUntrackedFiles(t *testing.T) {
	root := t.TempDir()
	gitRun(t, root, "init", "-q")
	write(t, root, "CLAUDE.md", "# team\n")
	write(t, root, ".claude/settings.json", "{\"permissions\": {}}\n")
	gitRun(t, root, "add", ".")
	before := snapshot(t, root)

	out := mustRun(t, root, Options{Local: true}, false)
	for _, want := range []string{
		"hm init --local: ROOT (claude, codex, gemini)",
		"skipped   codex: Codex has no per-user file inside a repository",
		"skipped   gemini: Gemini CLI has no per-user file inside a repository",
		"created   .claude/settings.local.json: hooks ",
		"created   CLAUDE.local.md: instructions block",
		"changed   .git/info/exclude: git ignores .claude/settings.local.json and CLAUDE.local.md in this clone",
		"claude mcp add --scope local hm -- hm mcp",
		"undo: hm init --local --undo",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, rel := range []string{"CLAUDE.md", ".claude/settings.json"} {
		if read(t, root, rel) != before[rel].data {
			t.Errorf("--local changed the committed %s", rel)
		}
	}
	for _, rel := range []string{".mcp.json", "AGENTS.md", "GEMINI.md", ".codex", ".gemini"} {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("--local wrote %s, a file for everyone", rel)
		}
	}
	if got := read(t, root, localSettingsRel); !strings.Contains(got, "hm hook") {
		t.Errorf("%s has no hm hook:\n%s", localSettingsRel, got)
	}
	for _, rel := range []string{localSettingsRel, localClaudeMDRel} {
		gitRun(t, root, "check-ignore", "-q", rel)
	}
	if st := gitRun(t, root, "status", "--porcelain", "--untracked-files=all"); strings.Contains(st, "local") {
		t.Errorf("git status shows a per-user file:\n%s", st)
	}

	wired := snapshot(t, root)
	if again := mustRun(t, root, Options{Local: true}, false); !strings.Contains(again, "already wired: nothing changed") {
		t.Errorf("second run:\n%s", again)
	}
	if after := snapshot(t, root); !sameTree(wired, after) {
		t.Errorf("second run changed the tree:\n%s", diffTrees(files(wired), files(after)))
	}
	mustRun(t, root, Options{Local: true}, true)
	if after := snapshot(t, root); !sameContent(before, after) {
		t.Errorf("--local --undo did not restore the tree:\n%s", diffTrees(files(before), files(after)))
	}
}

// TestLocalBesideProject: the two scopes share one manifest; undoing one
// leaves the other wired.
func TestLocalBesideProject(t *testing.T) {
	root := t.TempDir()
	mkdir(t, filepath.Join(root, ".git", "info"))
	mustRun(t, root, Options{Agents: []string{"claude"}}, false)
	project := read(t, root, ".claude/settings.json")
	mustRun(t, root, Options{Agents: []string{"claude"}, Local: true}, false)
	mustRun(t, root, Options{Agents: []string{"claude"}, Local: true}, true)
	for _, rel := range []string{localSettingsRel, localClaudeMDRel} {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("--local --undo left %s", rel)
		}
	}
	if got := read(t, root, ".claude/settings.json"); got != project {
		t.Errorf("--local --undo changed the project's settings:\n%s", got)
	}
	if _, err := os.Lstat(filepath.Join(root, gitExcludeRel)); err == nil {
		t.Errorf("--local --undo left %s, which hm init created", gitExcludeRel)
	}
}

// TestLocalGitDir: where .git is not a directory of the root's own, hm init
// --local writes nothing there and says what to do instead.
func TestLocalGitDir(t *testing.T) {
	tests := []struct {
		name  string
		clone func(t *testing.T, root, outside string)
		want  string
	}{
		{"not a git repository", func(*testing.T, string, string) {}, "skipped   .git/info/exclude: not a git repository"},
		{"worktree: .git is a file", func(t *testing.T, root, outside string) {
			write(t, root, ".git", "gitdir: "+outside+"\n")
		}, "skipped   .git/info/exclude: .git is a file, not a directory of this root"},
		{".git a symlink out of the root", func(t *testing.T, root, outside string) {
			symlink(t, outside, filepath.Join(root, ".git"))
		}, "skipped   .git/info/exclude: .git is a symlink, not a directory of this root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := repoBeside(t)
			tc.clone(t, root, outside)
			outsideBefore := snapshot(t, outside)
			out := mustRun(t, root, Options{Agents: []string{"claude"}, Local: true}, false)
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if read(t, root, localSettingsRel) == "" {
				t.Errorf("%s not written", localSettingsRel)
			}
			mustRun(t, root, Options{Agents: []string{"claude"}, Local: true}, true)
			if after := snapshot(t, outside); !sameTree(outsideBefore, after) {
				t.Errorf("changed the directory outside the root:\n%s", diffTrees(files(outsideBefore), files(after)))
			}
		})
	}
}
