package roles

import "strings"

// IsSecretEnv reports whether the environment variable name holds a secret
// that hosted programs must not inherit: the Telegram settings (TELEGRAM_*),
// the operator's credentials (HM_OPERATOR*), and whatever settings.json's
// "secretEnv" lists (exact names, or prefixes ending in *). A nil team
// applies the fixed rules only.
func (t *Team) IsSecretEnv(name string) bool {
	if strings.HasPrefix(name, "TELEGRAM_") || strings.HasPrefix(name, "HM_OPERATOR") {
		return true
	}
	if t == nil {
		return false
	}
	for _, s := range t.SecretEnv {
		if p, ok := strings.CutSuffix(s, "*"); ok {
			if p != "" && strings.HasPrefix(name, p) {
				return true
			}
		} else if s == name {
			return true
		}
	}
	return false
}
