package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
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
