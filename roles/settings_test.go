package roles

import (
	"strings"
	"testing"
)

// TestParseRefusesMistakes: a settings.json mistake that would route,
// attribute or type messages other than the person meant is refused with
// an error naming it, not accepted silently.
func TestParseRefusesMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, settings, want string
	}{
		{"role twice", `{"panes":[{"role":"reviewer","id":"4","command":"a"},{"role":"reviewer","id":"5","command":"b"}]}`, `"reviewer"`},
		{"default role twice", `{"panes":[{"role":"architect","command":"claude"},{"role":"Architect","command":"codex"}]}`, `"architect"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			team, err := Parse([]byte(tc.settings))
			if err == nil {
				t.Fatalf("Parse(%s) accepted: members %+v", tc.settings, team.Members())
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Errorf("Parse(%s) = %v, want it to name %s", tc.settings, err, tc.want)
			}
		})
	}
}
