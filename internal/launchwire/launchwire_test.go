package launchwire

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var files = Files{ClaudeMCP: "/r/.squidrun/runtime/launch/claude-mcp.json", ClaudeSettings: "/r/.squidrun/runtime/launch/claude-settings.json"}

const (
	cf   = "--mcp-config=/r/.squidrun/runtime/launch/claude-mcp.json --settings=/r/.squidrun/runtime/launch/claude-settings.json"
	cxCF = `-c 'mcp_servers.hm.command="hm"' -c 'mcp_servers.hm.args=["mcp"]'`
)

func TestCommand(t *testing.T) {
	cases := []struct{ in, want string }{
		{"claude", "claude " + cf},
		{"  claude  ", "  claude " + cf + "  "},
		{"/usr/local/bin/claude --model opus", "/usr/local/bin/claude " + cf + " --model opus"},
		{`claude "fix the bug"`, "claude " + cf + ` "fix the bug"`},
		{"claude -- prompt", "claude " + cf + " -- prompt"},
		{"exec claude", "exec claude " + cf},
		{"FOO=1 env BAR='x y' claude", "FOO=1 env BAR='x y' claude " + cf},
		{"claude --mcp-config other.json", "claude --settings=/r/.squidrun/runtime/launch/claude-settings.json --mcp-config other.json"},
		{"claude --mcp-config=a.json --settings s.json", "claude --mcp-config=a.json --settings s.json"},
		{"claude -- --mcp-config", "claude " + cf + " -- --mcp-config"},
		{"codex", "codex " + cxCF},
		{"codex --full-auto 'do it'", "codex " + cxCF + " --full-auto 'do it'"},
		{`codex -c 'mcp_servers.hm.command="/opt/hm"'`, `codex -c 'mcp_servers.hm.command="/opt/hm"'`},
		{`codex --config=mcp_servers.hm.args=[]`, `codex --config=mcp_servers.hm.args=[]`},
		{`codex -c model="o3"`, "codex " + cxCF + ` -c model="o3"`},
		// sh -c: the string is rewritten and quoted again.
		{`sh -c 'claude --model opus'`, `sh -c 'claude ` + cf + ` --model opus'`},
		{`bash -lc "exec codex"`, `bash -lc 'exec codex -c '\''mcp_servers.hm.command="hm"'\'' -c '\''mcp_servers.hm.args=["mcp"]'\'''`},
		{`/bin/sh -c claude`, `/bin/sh -c 'claude ` + cf + `'`},
		// Left alone: not a direct invocation, or not one simple command.
		{"gemini", "gemini"},
		{"bash", "bash"},
		{"claude-code", "claude-code"},
		{"npx @anthropic-ai/claude-code", "npx @anthropic-ai/claude-code"},
		{"cd /repo && claude", "cd /repo && claude"},
		{"claude; echo done", "claude; echo done"},
		{"claude | tee log", "claude | tee log"},
		{"claude > log", "claude > log"},
		{"$(which claude)", "$(which claude)"},
		{"`which claude`", "`which claude`"},
		{"$CLAUDE", "$CLAUDE"},
		{"echo claude", "echo claude"},
		{"claude 'unterminated", "claude 'unterminated"},
		{"claude \\\n --model x", "claude \\\n --model x"},
		{"# claude", "# claude"},
		{`sh -c "claude $ARGS"`, `sh -c "claude $ARGS"`},
		{`sh -c 'cd /x && claude'`, `sh -c 'cd /x && claude'`},
		{`sh -c 'sh -c claude'`, `sh -c 'sh -c claude'`},
		{`sh script.sh`, `sh script.sh`},
		{"", ""},
	}
	for _, c := range cases {
		got, added := Command(c.in, files)
		if got != c.want {
			t.Errorf("Command(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if (added != nil) != (got != c.in) {
			t.Errorf("Command(%q): added %q for %q", c.in, added, got)
		}
	}
}

// TestCommandShell runs rewritten lines through /bin/sh and checks the
// program gets the flags as separate words before its own arguments.
func TestCommandShell(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		in   string
		want []string
	}{
		{`claude "it's a prompt"`, []string{"--mcp-config=" + files.ClaudeMCP, "--settings=" + files.ClaudeSettings, "it's a prompt"}},
		{`sh -c 'exec codex "a b"'`, []string{"-c", `mcp_servers.hm.command="hm"`, "-c", `mcp_servers.hm.args=["mcp"]`, "a b"}},
		{`bash -c "claude --x 'y z'"`, []string{"--mcp-config=" + files.ClaudeMCP, "--settings=" + files.ClaudeSettings, "--x", "y z"}},
	}
	for _, c := range cases {
		line, added := Command(c.in, files)
		if added == nil {
			t.Fatalf("Command(%q): not rewritten", c.in)
		}
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q ran with %q, want %q", line, got, c.want)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "launch")
	f, err := WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v %v", fi, err)
	}
	var m struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
				AsyncRewake   bool `json:"asyncRewake"`
				Timeout       int  `json:"timeout"`
			}
		} `json:"hooks"`
	}
	for path, v := range map[string]any{f.ClaudeMCP: &m, f.ClaudeSettings: &s} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, fi, err)
		}
		data, _ := os.ReadFile(path)
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	if hm := m.MCPServers["hm"]; hm.Command != "hm" || !reflect.DeepEqual(hm.Args, []string{"mcp"}) {
		t.Errorf("mcp config: %+v", m)
	}
	// What hm init wires for Claude Code: five events, Stop twice (the
	// plain hook, and the waiting one in the background).
	stop := s.Hooks["Stop"]
	if len(s.Hooks) != 5 || len(stop) != 2 || stop[0].Hooks[0].Command != "hm hook claude Stop" || s.Hooks["PostToolUse"][0].Matcher != "*" ||
		s.Hooks["Notification"][0].Hooks[0].Command != "hm hook claude Notification" {
		t.Errorf("settings hooks: %+v", s)
	} else if w := stop[1].Hooks[0]; !strings.HasPrefix(w.Command, "hm hook claude Stop --wait ") || !w.AsyncRewake || w.Timeout <= 0 {
		t.Errorf("the waiting Stop hook: %+v, want hm hook claude Stop --wait D, asyncRewake, a timeout", w)
	}
	if _, err := WriteFiles(dir); err != nil { // again: replaced in place
		t.Fatal(err)
	}
}
