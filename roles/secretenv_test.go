package roles

import "testing"

func TestIsSecretEnv(t *testing.T) {
	t.Parallel()
	team, err := Parse([]byte(`{"secretEnv": ["OPENAI_API_KEY", "AWS_*", "*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want bool
	}{
		{"TELEGRAM_BOT_TOKEN", true}, {"TELEGRAM_CHAT_ID", true}, {"TELEGRAM_API_URL", true},
		{"HM_OPERATOR_TOKEN", true}, {"HM_OPERATOR", true},
		{"OPENAI_API_KEY", true}, {"AWS_SECRET_ACCESS_KEY", true}, {"AWS_", true},
		{"OPENAI_API_KEY_2", false}, {"PATH", false}, {"HOME", false}, {"HM_TOKEN", false},
		{"TELEGRAM", false}, {"", false},
	}
	for _, tt := range tests {
		if got := team.IsSecretEnv(tt.name); got != tt.want {
			t.Errorf("IsSecretEnv(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	var none *Team
	if !none.IsSecretEnv("TELEGRAM_BOT_TOKEN") || none.IsSecretEnv("OPENAI_API_KEY") {
		t.Error("a nil team applies only the fixed rules")
	}
}
