package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestPaneEnvHasNoSecrets: a hosted program inherits the hub's environment
// minus TELEGRAM_*, HM_OPERATOR* and the names settings.json's secretEnv
// lists, and gets its own HM_TOKEN, which is not the operator secret.
// (Before, TELEGRAM_BOT_TOKEN reached every pane.)
func TestPaneEnvHasNoSecrets(t *testing.T) {
	t.Setenv("TELEGRAM_BOT_TOKEN", "tg-secret-1")
	t.Setenv("HM_OPERATOR_TOKEN", "op-secret-2")
	t.Setenv("OPENAI_API_KEY", "oa-secret-3")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-4")
	t.Setenv("HM_TEST_VISIBLE", "visible-5")
	th := startHub(t, hubConfig{settings: `{"secretEnv": ["OPENAI_API_KEY", "AWS_*"],
		"panes": [{"role": "architect", "command": "env > $ROOT/env.txt; exec sleep 60", "profile": "default"}]}`})
	path := filepath.Join(th.root, "env.txt")
	var env string
	poll.For(t, 20*time.Second, func() error {
		data, err := os.ReadFile(path)
		env = string(data)
		return poll.Want(err == nil && strings.Contains(env, "HM_TOKEN="), "the pane to write env.txt")
	})
	for _, secret := range []string{"tg-secret-1", "op-secret-2", "oa-secret-3", "aws-secret-4", th.token()} {
		if strings.Contains(env, secret) {
			t.Errorf("the pane's environment holds the secret %q:\n%s", secret, env)
		}
	}
	for _, want := range []string{"HM_TEST_VISIBLE=visible-5", "SQUIDRUN_ROLE=architect", "HM_PORT="} {
		if !strings.Contains(env, want) {
			t.Errorf("the pane's environment lacks %s", want)
		}
	}
}

// TestPaneEnvIsInteractive: a pane is a terminal a person watches, so the
// markers of a batch run (CI=true and the like) do not reach it; under them
// Gemini CLI ran headless, found no prompt on stdin and exited 42, and
// Ink-drawn CLIs stop redrawing. A command that sets CI itself keeps it.
// (Before, the CI run of make test lost every Gemini case this way.)
func TestPaneEnvIsInteractive(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("CONTINUOUS_INTEGRATION", "1")
	t.Setenv("CI_JOB_ID", "77")
	t.Setenv("HM_TEST_VISIBLE", "visible-5")
	th := startHub(t, hubConfig{settings: `{"panes": [
		{"role": "architect", "command": "env > $ROOT/env.txt; exec sleep 60", "profile": "default"},
		{"role": "builder", "command": "CI=mine env > $ROOT/env2.txt; exec sleep 60", "profile": "default"}]}`})
	read := func(name string) string {
		var env string
		poll.For(t, 20*time.Second, func() error {
			data, err := os.ReadFile(filepath.Join(th.root, name))
			env = string(data)
			return poll.Want(err == nil && strings.Contains(env, "HM_TOKEN="), "the pane to write %s", name)
		})
		return env
	}
	env := read("env.txt")
	for _, line := range strings.Split(env, "\n") {
		k, _, _ := strings.Cut(line, "=")
		if k == "CI" || k == "GITHUB_ACTIONS" || k == "CONTINUOUS_INTEGRATION" || strings.HasPrefix(k, "CI_") {
			t.Errorf("the pane's environment holds the batch marker %q", line)
		}
	}
	if !strings.Contains(env, "HM_TEST_VISIBLE=visible-5") {
		t.Errorf("the pane's environment lacks HM_TEST_VISIBLE:\n%s", env)
	}
	if env2 := read("env2.txt"); !strings.Contains(env2, "\nCI=mine\n") && !strings.HasPrefix(env2, "CI=mine\n") {
		t.Errorf("a command's own CI=mine did not reach its program:\n%s", env2)
	}
}
