package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLaunchFlags: a pane running Claude Code or Codex directly gets hm's
// MCP server (and, for Claude, its hooks) by launch flags; the Claude
// files are 0600 under runtime/launch; "launchWiring": false turns it off.
func TestLaunchFlags(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		// Records its arguments, one a line, then waits to be stopped.
		script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_FILE.tmp\"\nmv \"$ARGS_FILE.tmp\" \"$ARGS_FILE\"\nexec sleep 60\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := func(t *testing.T, path string) []string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			data, err := os.ReadFile(path)
			if err == nil {
				return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", path, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settings := func(extra string) string {
		return `{` + extra + `"panes": [
			{"role": "architect", "command": "ARGS_FILE=$ROOT/claude.args ` + filepath.Join(bin, "claude") + ` --model opus"},
			{"role": "builder", "command": "sh -c 'ARGS_FILE=$ROOT/codex.args exec ` + filepath.Join(bin, "codex") + ` \"do it\"'"}]}`
	}

	t.Run("on", func(t *testing.T) {
		th := startHub(t, hubConfig{settings: settings("")})
		launch := filepath.Join(th.root, ".squidrun", "runtime", "launch")
		want := []string{"--mcp-config=" + filepath.Join(launch, "claude-mcp.json"), "--settings=" + filepath.Join(launch, "claude-settings.json"), "--model", "opus"}
		if got := args(t, filepath.Join(th.root, "claude.args")); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("claude ran with %q, want %q", got, want)
		}
		want = []string{"-c", `mcp_servers.hm.command="hm"`, "-c", `mcp_servers.hm.args=["mcp"]`, "do it"}
		if got := args(t, filepath.Join(th.root, "codex.args")); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("codex ran with %q, want %q", got, want)
		}
		for _, f := range []string{"claude-mcp.json", "claude-settings.json"} {
			fi, err := os.Stat(filepath.Join(launch, f))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v", f, fi, err)
			}
		}
		data, _ := os.ReadFile(filepath.Join(launch, "claude-mcp.json"))
		if !strings.Contains(string(data), `"hm"`) || !strings.Contains(string(data), `"mcp"`) {
			t.Errorf("claude-mcp.json: %s", data)
		}
	})
	t.Run("off", func(t *testing.T) {
		th := startHub(t, hubConfig{settings: settings(`"launchWiring": false, `)})
		if got := args(t, filepath.Join(th.root, "claude.args")); strings.Join(got, " ") != "--model opus" {
			t.Errorf("claude ran with %q", got)
		}
		if got := args(t, filepath.Join(th.root, "codex.args")); strings.Join(got, " ") != "do it" {
			t.Errorf("codex ran with %q", got)
		}
		if _, err := os.Stat(filepath.Join(th.root, ".squidrun", "runtime", "launch")); err == nil {
			t.Error("launch files written with launchWiring false")
		}
	})
}
