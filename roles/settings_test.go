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
		{"header is user", `{"panes":[{"role":"reviewer","header":"USER"}]}`, `"USER"`},
		{"header is system", `{"panes":[{"role":"reviewer","header":"system"}]}`, `"SYSTEM"`},
		{"header is all", `{"panes":[{"role":"reviewer","header":"ALL"}]}`, `"ALL"`},
		{"header is telegram", `{"panes":[{"role":"reviewer","header":"TELEGRAM"}]}`, `"TELEGRAM"`},
		{"header is unverified", `{"panes":[{"role":"reviewer","header":"UNVERIFIED"}]}`, `"UNVERIFIED"`},
		{"header is another role's alias", `{"panes":[{"role":"reviewer","header":"LEAD"}]}`, `"LEAD"`},
		{"default member's header is another's alias", `{"panes":[{"role":"oracle","header":"DEVOPS"}]}`, `"DEVOPS"`},
		{"pane id is all", `{"panes":[{"role":"reviewer","id":"all"}]}`, `"all"`},
		{"pane id is user", `{"panes":[{"role":"reviewer","id":"User"}]}`, `"User"`},
		{"pane id is telegram", `{"panes":[{"role":"builder","id":"telegram"}]}`, `"telegram"`},
		{"pane id is another role's alias", `{"panes":[{"role":"reviewer","id":"devops"}]}`, `"devops"`},
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

// TestParseAcceptsOwnAlias: a header or pane id that is one of the member's
// own aliases names the same member, so it is fine.
func TestParseAcceptsOwnAlias(t *testing.T) {
	t.Parallel()
	team, err := Parse([]byte(`{"panes":[{"role":"architect","header":"LEAD","id":"arch"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lead", "arch", "director", "architect"} {
		if got, err := team.Resolve(name); err != nil || got.Member.Role != "architect" {
			t.Errorf("Resolve(%q) = %+v, %v", name, got, err)
		}
	}
}

// TestParseWarnsUnknownKeys: a key settings.json does not know, at any
// level, is ignored but named (a misspelt "comand" would otherwise run
// $SHELL without a word); it is not refused, since SquidRun's settings.json
// at the same path has keys of its own. Before the fix nothing was said.
func TestParseWarnsUnknownKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		settings string
		want     []string
	}{
		{`{"port":9901}`, nil},
		{`{"pane":[{"role":"reviewer","command":"gemini"}]}`, []string{`"pane"`}},
		{`{"panes":[{"role":"architect","comand":"claude"}]}`, []string{`"comand"`}},
		{`{"background":{"maximum":1}}`, []string{`"maximum"`}},
		{`{"profiles":{"mine":{"redy":[">"]}}}`, []string{`"redy"`}},
		{`{"squidrunOnly":true,"panes":[{"role":"architect","comand":"claude","colour":"red"}]}`, []string{`"squidrunOnly"`, `"comand"`, `"colour"`}},
	}
	for _, tc := range tests {
		team, err := Parse([]byte(tc.settings))
		if err != nil {
			t.Errorf("Parse(%s) = %v, want the team with warnings", tc.settings, err)
			continue
		}
		if len(team.Warnings) != len(tc.want) {
			t.Errorf("Parse(%s) warnings %q, want %d naming %v", tc.settings, team.Warnings, len(tc.want), tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(strings.Join(team.Warnings, "\n"), w) {
				t.Errorf("Parse(%s) warnings %q do not name %s", tc.settings, team.Warnings, w)
			}
		}
	}
}
