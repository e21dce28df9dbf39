package hub_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
)

// TestSecretsNotStaged: in a git repository, once the hub has started (its
// token, ledger key and ledger written), `git add -A` stages the repository's
// own files and .squidrun/'s settings.json and .gitignore, and nothing else of
// .squidrun/ (issue #33: runtime/hub-token, ledger-key and the ledger were
// staged).
func TestSecretsNotStaged(t *testing.T) {
	root := t.TempDir()
	git(t, root, "init", "-q")
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("a repository\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHubAt(t, root, hubConfig{settings: `{"panes": [{"role": "architect", "command": "exec sleep 60", "profile": "default"}]}`})
	lay := layout.Layout{Root: root}
	secrets := []string{lay.Token(), lay.LedgerKey(), lay.Ledger(), lay.HubJSON(), lay.AppStatus()}
	poll.For(t, 30*time.Second, func() error {
		for _, p := range secrets {
			if _, err := os.Stat(p); err != nil {
				return err
			}
		}
		return nil
	})
	git(t, root, "add", "-A")
	staged := strings.Fields(git(t, root, "diff", "--cached", "--name-only"))
	want := []string{".squidrun/.gitignore", ".squidrun/settings.json", "README.md"}
	if !slices.Equal(staged, want) {
		t.Errorf("git add -A staged %q, want %q", staged, want)
	}
	th.stop()
}

// git runs git in dir with no configuration of the machine's or the user's
// (their excludes would hide what this test looks for) and returns its
// output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test needs git on the PATH: %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
