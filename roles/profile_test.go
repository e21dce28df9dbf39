package roles

import (
	"strings"
	"testing"
)

func TestInferProfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command, want string
	}{
		// The agent CLIs, plain and by path.
		{"claude", "claude"},
		{"claude --dangerously-skip-permissions", "claude"},
		{"codex", "codex"},
		{"codex --full-auto", "codex"},
		{"gemini", "gemini"},
		{"/usr/local/bin/codex", "codex"},
		{"/usr/local/bin/codex exec", "codex"},
		{"~/.local/bin/claude", "claude"},
		{"./node_modules/.bin/gemini --yolo", "gemini"},
		{"claude-code", "claude"},
		{"gemini-cli", "gemini"},
		{"codex.exe", "codex"},
		{`"/opt/my tools/codex" --full-auto`, "codex"},
		// Wrappers: exec, env, assignments, nohup, command.
		{"exec claude", "claude"},
		{"exec -a agent codex", "codex"},
		{"env FOO=1 gemini", "gemini"},
		{"env -i PATH=/usr/bin HOME=/tmp claude", "claude"},
		{"env -u SECRET -- codex", "codex"},
		{"env -S 'codex --full-auto'", "codex"},
		{"FOO=1 BAR=2 gemini", "gemini"},
		{"FOO='a b' codex", "codex"},
		{"nohup codex", "codex"},
		{"nohup claude > out.log 2>&1", "claude"},
		{"command claude", "claude"},
		{"command -p codex", "codex"},
		{"exec env FOO=1 nohup command /usr/bin/gemini", "gemini"},
		{"nice -n 10 codex", "codex"},
		{"time claude", "claude"},
		{"caffeinate -i codex", "codex"},
		// Shells running a command see through to it.
		{"sh -c 'codex --full-auto'", "codex"},
		{`bash -lc "claude --continue"`, "claude"},
		{`bash -c "exec gemini"`, "gemini"},
		{"zsh -ic 'env FOO=1 codex'", "codex"},
		{"/bin/sh -c 'cd /repo && exec claude'", "claude"},
		{`sh -c "sh -c 'codex'"`, "codex"},
		{"bash --login -c codex", "codex"},
		{"fish -c codex", "codex"},
		{"fish --command=codex", "codex"},
		{"exec /bin/bash -c 'python3 agent.py'", "default"},
		{"sh -c 'bash -l'", "shell"},
		// npx and friends, node scripts.
		{"npx @openai/codex", "codex"},
		{"npx -y @openai/codex@latest --full-auto", "codex"},
		{"npx --yes @google/gemini-cli", "gemini"},
		{"npx @anthropic-ai/claude-code", "claude"},
		{"npx -p @openai/codex codex", "codex"},
		{"bunx @google/gemini-cli", "gemini"},
		{"pnpm dlx @openai/codex", "codex"},
		{"npm exec -- @openai/codex", "codex"},
		{"node /usr/lib/node_modules/@google/gemini-cli/dist/index.js", "gemini"},
		{"node ~/.npm-global/bin/gemini", "gemini"},
		{"node --no-warnings /opt/codex/bin/codex.js", "codex"},
		{"npx cowsay", "default"},
		{"node server.js", "default"},
		// Interactive shells.
		{"bash", "shell"},
		{"zsh", "shell"},
		{"fish", "shell"},
		{"sh", "shell"},
		{"dash", "shell"},
		{"ksh", "shell"},
		{"/bin/bash -l", "shell"},
		{"bash -i", "shell"},
		{"bash -il", "shell"},
		{"zsh -l", "shell"},
		{"/usr/bin/fish --login", "shell"},
		{"$SHELL", "shell"},
		{"${SHELL}", "shell"},
		{`"$SHELL" -l`, "shell"},
		{"exec $SHELL -l", "shell"},
		{"exec zsh", "shell"},
		{"env sh", "shell"},
		{"env -i bash --norc", "shell"},
		{"bash -o vi", "shell"},
		{"cd /repo && exec bash", "shell"},
		{"exec -l bash", "shell"},
		{"busybox sh", "shell"},
		{"sudo -i", "shell"},
		{"sudo -u agent codex", "codex"},
		{"su - agent", "shell"},
		{"su agent -c 'exec claude'", "claude"},
		{"bash # just a shell", "shell"},
		{"codex 2>&1 | tee codex.log", "codex"},
		{"cat notes | bash", "default"},
		{"export A=1; exec zsh -l", "shell"},
		{"claude && echo done", "claude"},
		{"(cd /repo; exec gemini)", "gemini"},
		// Everything else.
		{"python3 agent.py", "default"},
		{"bash ./run-agent.sh", "default"},
		{"sleep 30", "default"},
		{"exec sleep 30", "default"},
		{"aider --model x", "default"},
		{"claudette", "default"},
		{"command -v codex", "default"},
		{"", "default"},
		{"   ", "default"},
		{"FOO=1", "default"},
		{"env", "default"},
		{"sh -c", "default"},
		{"'unterminated", "default"},
	}
	for _, tc := range tests {
		if got := InferProfile(tc.command); got != tc.want {
			t.Errorf("InferProfile(%q) = %q, want %q", tc.command, got, tc.want)
		}
	}
}

// FuzzInferProfile: any command line gives one of the profile names, the
// same one each time, without panicking.
func FuzzInferProfile(f *testing.F) {
	for _, s := range []string{
		"claude", "sh -c 'codex --full-auto'", `bash -lc "exec claude"`, "env -i FOO=1 gemini",
		"npx -y @openai/codex@latest", "node .../gemini", "$SHELL -l", "exec -a x env -S 'sh -c \"codex\"'",
		`sh -c "sh -c 'sh -c \"sh -c codex\"'"`, "a=1 b=2 c", "codex 2>&1 | tee log &", "'", `"\`, "\\",
	} {
		f.Add(s)
	}
	names := map[string]bool{"claude": true, "codex": true, "gemini": true, "shell": true, "default": true}
	f.Fuzz(func(t *testing.T, command string) {
		got := InferProfile(command)
		if !names[got] {
			t.Fatalf("InferProfile(%q) = %q, not a profile name", command, got)
		}
		if again := InferProfile(command); again != got {
			t.Fatalf("InferProfile(%q) = %q then %q", command, got, again)
		}
		if strings.TrimSpace(command) == "" && got != "default" {
			t.Fatalf("InferProfile(%q) = %q for an empty command", command, got)
		}
	})
}

// TestSettingsProfile: settings.json's "profile" always wins; without it the
// command's inferred profile is used, for panes and background slots alike.
func TestSettingsProfile(t *testing.T) {
	t.Setenv("SHELL", "/bin/zsh")
	tests := []struct {
		name, settings    string
		role, wantProfile string
		bgRole, bgProfile string
	}{
		{"inferred", `{"panes":[{"role":"builder","command":"sh -c 'codex --full-auto'"}]}`, "builder", "codex", "builder-bg-1", "codex"},
		{"explicit wins", `{"panes":[{"role":"builder","command":"bash","profile":"Codex"}]}`, "builder", "codex", "builder-bg-1", "codex"},
		{"explicit default on an agent", `{"panes":[{"role":"builder","command":"exec claude","profile":"default"}]}`, "builder", "default", "", ""},
		{"env wrapper", `{"panes":[{"role":"oracle","command":"env FOO=1 gemini"}]}`, "oracle", "gemini", "", ""},
		{"new role without command is a shell", `{"panes":[{"role":"reviewer"}]}`, "reviewer", "shell", "", ""},
		{"default team", `{}`, "architect", "shell", "builder-bg-2", "shell"},
		{"background command", `{"panes":[{"role":"builder","command":"claude"}],"background":{"command":"npx -y @openai/codex"}}`, "builder", "claude", "builder-bg-1", "codex"},
		{"background inherits the owner's explicit profile", `{"panes":[{"role":"builder","command":"my-agent","profile":"gemini"}]}`, "builder", "gemini", "builder-bg-3", "gemini"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			team, err := Parse([]byte(tc.settings))
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := team.Lookup(tc.role); !ok || m.Profile != tc.wantProfile {
				t.Errorf("%s: profile %q (found %v), want %q", tc.role, m.Profile, ok, tc.wantProfile)
			}
			if tc.bgRole == "" {
				return
			}
			if m, ok := team.Lookup(tc.bgRole); !ok || m.Profile != tc.bgProfile {
				t.Errorf("%s: profile %q (found %v), want %q", tc.bgRole, m.Profile, ok, tc.bgProfile)
			}
		})
	}
}
