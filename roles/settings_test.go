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
		{"unknown profile", `{"panes":[{"role":"architect","command":"bash","profile":"clade"}]}`, `"clade"`},
		{"profile of another section", `{"panes":[{"role":"reviewer","profile":"mine"}],"profiles":{"yours":{"quietMs":10}}}`, `"mine"`},
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

// TestParseAcceptsProfiles: built-in profile names in any case and spacing,
// and the profiles settings.json defines, are accepted and normalised.
func TestParseAcceptsProfiles(t *testing.T) {
	t.Parallel()
	tests := []struct{ settings, want string }{
		{`{"panes":[{"role":"reviewer","profile":" Codex "}]}`, ProfileCodex},
		{`{"panes":[{"role":"reviewer","command":"bash","profile":"Mine"}],"profiles":{" mine":{"quietMs":10}}}`, "mine"},
		{`{"panes":[{"role":"reviewer","profile":"DEFAULT"}]}`, ProfileDefault},
	}
	for _, tc := range tests {
		team, err := Parse([]byte(tc.settings))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.settings, err)
			continue
		}
		if m, _ := team.Lookup("reviewer"); m.Profile != tc.want {
			t.Errorf("Parse(%s): profile %q, want %q", tc.settings, m.Profile, tc.want)
		}
	}
}
