package realcli

import (
	"path/filepath"
	"strings"
	"testing"
)

// agentCLI knows how to run one real CLI in a pane against the scripted
// model with only the model replaced (../../shared/real-clis.md): scratch
// configuration, no dialog, tools run without asking. HOME is a scratch
// directory, so no user configuration is read or written.
type agentCLI struct {
	name string // binary and hm profile: claude, codex, gemini
	// configure writes the CLI's scratch configuration under scratch for
	// a pane in root talking to modelURL, and returns the environment
	// and the flags of its command line. hooks: root was wired by hm init.
	configure func(t testing.TB, scratch, root, modelURL string, hooks bool) (env, flags []string)
}

var agentCLIs = []agentCLI{
	{name: "claude", configure: configureClaude},
	{name: "codex", configure: configureCodex},
	{name: "gemini", configure: configureGemini},
}

// command is the pane's command line: `exec env VARS... <cli> FLAGS...`,
// so the pane's process is the CLI itself (hm's launch wiring recognises
// it by the binary's base name).
func (c agentCLI) command(t testing.TB, scratch, root, modelURL string, hooks bool) string {
	bin, _, err := Find(c.name)
	if err != nil {
		t.Fatal(err)
	}
	env, flags := c.configure(t, scratch, root, modelURL, hooks)
	env = append([]string{"HOME=" + filepath.Join(scratch, "home")}, env...)
	return strings.Join(append(append(append([]string{"exec", "env"}, env...), bin), flags...), " ")
}

// fakeAnthropicKey is a key of the real shape; Claude Code asks once
// whether to use it unless its last 20 characters are approved.
const fakeAnthropicKey = "sk-ant-api03-scriptedmodelkeyscriptedmodelkey0123456789"

func configureClaude(t testing.TB, scratch, root, modelURL string, hooks bool) (env, flags []string) {
	cfg := filepath.Join(scratch, "claude")
	writeJSON(t, filepath.Join(cfg, ".claude.json"), map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{fakeAnthropicKey[len(fakeAnthropicKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{root: map[string]any{"hasTrustDialogAccepted": true, "enabledMcpjsonServers": []string{"hm"}}},
	})
	writeJSON(t, filepath.Join(cfg, "settings.json"), map[string]any{
		"skipDangerousModePermissionPrompt": true, "enableAllProjectMcpServers": true,
	})
	env = []string{"CLAUDE_CONFIG_DIR=" + cfg, "ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=" + fakeAnthropicKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"IS_SANDBOX=1"} // --dangerously-skip-permissions refuses root without it
	return env, []string{"--dangerously-skip-permissions"}
}

func configureCodex(t testing.TB, scratch, root, modelURL string, hooks bool) (env, flags []string) {
	cfg := filepath.Join(scratch, "codex")
	writeFile(t, filepath.Join(cfg, "config.toml"), `model = "gpt-scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "`+modelURL+`/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects."`+root+`"]
trust_level = "trusted"

[notice]
hide_full_access_warning = true
`)
	flags = []string{"--dangerously-bypass-approvals-and-sandbox"}
	if hooks {
		// Project hooks run only after a review in /hooks, or with this.
		flags = append(flags, "--dangerously-bypass-hook-trust")
	}
	return []string{"CODEX_HOME=" + cfg, "SCRIPTED_API_KEY=scripted"}, flags
}

func configureGemini(t testing.TB, scratch, root, modelURL string, hooks bool) (env, flags []string) {
	cfg := filepath.Join(scratch, "gemini")
	writeJSON(t, filepath.Join(cfg, ".gemini", "settings.json"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"general":  map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"model":    map[string]any{"name": "gemini-2.5-flash", "skipNextSpeakerCheck": true},
	})
	return []string{"GEMINI_CLI_HOME=" + cfg, "GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + modelURL}, []string{"--yolo"}
}
