package roles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResolveDefaultTeam(t *testing.T) {
	t.Parallel()
	team := Default()
	tests := []struct {
		in   string
		kind TargetKind
		role string
	}{
		{"architect", TargetMember, "architect"},
		{"ARCH", TargetMember, "architect"},
		{"1", TargetMember, "architect"},
		{"Lead", TargetMember, "architect"},
		{"director", TargetMember, "architect"},
		{"builder", TargetMember, "builder"},
		{"2", TargetMember, "builder"},
		{"devops", TargetMember, "builder"},
		{"implementer-b", TargetMember, "builder"},
		{"worker-b", TargetMember, "builder"},
		{"ana", TargetMember, "oracle"},
		{"investigator", TargetMember, "oracle"},
		{"3", TargetMember, "oracle"},
		{"builder-bg-1", TargetMember, "builder-bg-1"},
		{"BG-2-3", TargetMember, "builder-bg-3"},
		{"BUILDER-BG-2", TargetMember, "builder-bg-2"},
		{"all", TargetAll, ""},
		{"USER", TargetUser, ""},
		{"telegram", TargetTelegram, ""},
	}
	for _, tt := range tests {
		got, err := team.Resolve(tt.in)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.in, err)
			continue
		}
		if got.Kind != tt.kind || got.Member.Role != tt.role {
			t.Errorf("Resolve(%q) = %v/%q, want %v/%q", tt.in, got.Kind, got.Member.Role, tt.kind, tt.role)
		}
	}
	for _, bad := range []string{"", "nobody", "../etc", "builder-bg-4", "bg-2-0", "all ", "a\x00b"} {
		if _, err := team.Resolve(bad); !errors.Is(err, ErrInvalidTarget) && bad != "all " {
			t.Errorf("Resolve(%q) err = %v, want invalid_target", bad, err)
		}
	}
	bg, _ := team.Lookup("builder-bg-2")
	if !bg.Background || bg.Owner != "builder" || bg.PaneID != "bg-2-2" || bg.Header != "BUILDER-BG-2" || bg.Slot != 2 {
		t.Errorf("bg member = %+v", bg)
	}
	if r, ok := team.RoleForHeader("builder-bg-2"); !ok || r != "builder-bg-2" {
		t.Errorf("RoleForHeader = %q %v", r, ok)
	}
	if team.HeaderFor("user") != "USER" || team.HeaderFor("architect") != "ARCH" {
		t.Error("HeaderFor")
	}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	team, err := Parse([]byte(`{"port": 9911,
	 "panes": [{"role": "architect", "id": "1", "header": "ARCH", "command": "claude --x", "transport": "pty"},
	           {"role": "reviewer", "id": "4", "header": "REVIEW", "command": "gemini", "profile": "gemini", "transport": "ws"}],
	 "background": {"owner": "builder", "max": 2, "command": "codex", "idleTTL": "5m"},
	 "telegram": {"chatId": "42", "allowlist": ["42", "7"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if team.Port != 9911 || team.Background.Max != 2 || team.Background.IdleTTL != 5*time.Minute || team.Background.Command != "codex" {
		t.Errorf("team = %+v", team)
	}
	a, _ := team.Lookup("architect")
	if a.Command != "claude --x" || a.Profile != "claude" {
		t.Errorf("architect = %+v", a)
	}
	r, err := team.Resolve("review")
	if err != nil || r.Member.Role != "reviewer" || r.Member.Transport != TransportWS || r.Member.Profile != "gemini" {
		t.Errorf("reviewer = %+v %v", r, err)
	}
	if len(team.Members()) != 4 || len(team.BackgroundMembers()) != 2 {
		t.Errorf("members %d bg %d", len(team.Members()), len(team.BackgroundMembers()))
	}
	if team.Telegram.ChatID != "42" || len(team.Telegram.Allowlist) != 2 {
		t.Errorf("telegram = %+v", team.Telegram)
	}
	bad := []string{
		`{`,
		`{"panes":[{"role":"all"}]}`,
		`{"panes":[{"role":"bad role"}]}`,
		`{"panes":[{"role":"x","transport":"carrier-pigeon"}]}`,
		`{"panes":[{"role":"x","id":"1"}]}`,
		`{"background":{"owner":"nobody"}}`,
		`{"background":{"idleTTL":"soon"}}`,
		`{"background":{"max":50}}`,
	}
	for _, b := range bad {
		if _, err := Parse([]byte(b)); err == nil {
			t.Errorf("Parse(%s) accepted", b)
		}
	}
}

func TestLoadMissingGivesDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	team, err := Load(filepath.Join(dir, "settings.json"))
	if err != nil || len(team.Members()) != 3 {
		t.Fatalf("Load missing = %v, %v", team, err)
	}
	p := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(p, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Fatal("bad settings accepted")
	}
}

// TestSettingsMinutes: the settings.json numbers of minutes, one rule
// (roles.minutes): "waitingForHumanMinutes" sets how long a pane waits
// for a person before the Telegram line (default 5 minutes),
// "paneKeepMinutes" how long a keeper holds a pane for the next hub
// (default 10); 0 is off, a negative number refused.
func TestSettingsMinutes(t *testing.T) {
	t.Parallel()
	waiting := func(t *Team) time.Duration { return t.WaitingNotice }
	keep := func(t *Team) time.Duration { return t.PaneKeep }
	for _, tc := range []struct {
		settings string
		get      func(*Team) time.Duration
		want     time.Duration
		err      bool
	}{
		{`{}`, waiting, DefaultWaitingNotice, false},
		{`{"waitingForHumanMinutes": 2}`, waiting, 2 * time.Minute, false},
		{`{"waitingForHumanMinutes": 0.5}`, waiting, 30 * time.Second, false},
		{`{"waitingForHumanMinutes": 0}`, waiting, 0, false},
		{`{"waitingForHumanMinutes": -1}`, waiting, 0, true},
		{`{}`, keep, DefaultPaneKeep, false},
		{`{"paneKeepMinutes": 1.5}`, keep, 90 * time.Second, false},
		{`{"paneKeepMinutes": 0}`, keep, 0, false},
		{`{"paneKeepMinutes": -1}`, keep, 0, true},
	} {
		team, err := Parse([]byte(tc.settings))
		if (err != nil) != tc.err {
			t.Errorf("Parse(%s): %v", tc.settings, err)
			continue
		}
		if err == nil && tc.get(team) != tc.want {
			t.Errorf("Parse(%s): %v, want %v", tc.settings, tc.get(team), tc.want)
		}
	}
	if d := Default(); d.WaitingNotice != DefaultWaitingNotice || d.PaneKeep != DefaultPaneKeep {
		t.Errorf("default team: waiting %v, keep %v", d.WaitingNotice, d.PaneKeep)
	}
}

// TestBackgroundMax: settings' background max is the number of slots; 0
// turns them off (and leaves no builder-bg-N targets), absent is 3. Before
// the fix "max": 0 was read as absent and gave 3 slots.
func TestBackgroundMax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		settings string
		want     int
	}{
		{`{}`, 3},
		{`{"background":{"owner":"builder"}}`, 3},
		{`{"background":{"max":0}}`, 0},
		{`{"background":{"max":1}}`, 1},
		{`{"background":{"max":9}}`, 9},
	} {
		team, err := Parse([]byte(tc.settings))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.settings, err)
		}
		if team.Background.Max != tc.want || len(team.BackgroundMembers()) != tc.want {
			t.Errorf("Parse(%s): max %d, %d slots; want %d", tc.settings, team.Background.Max, len(team.BackgroundMembers()), tc.want)
		}
		if _, err := team.Resolve("builder-bg-1"); (err == nil) != (tc.want > 0) {
			t.Errorf("Parse(%s): Resolve(builder-bg-1) err = %v", tc.settings, err)
		}
	}
}

// TestNotificationsSettings: settings.json "notifications" turns the
// desktop and terminal notifications off or names the desktop command;
// absent, both are on.
func TestNotificationsSettings(t *testing.T) {
	for _, tc := range []struct {
		json              string
		desktop, terminal bool
		command           string
	}{
		{`{}`, true, true, ""},
		{`{"notifications":{"command":"notify-send -u critical"}}`, true, true, "notify-send -u critical"},
		{`{"notifications":{"desktop":false}}`, false, true, ""},
		{`{"notifications":{"terminal":false,"desktop":true}}`, true, false, ""},
	} {
		team, err := Parse([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		n := team.Notifications
		if n.DesktopOn() != tc.desktop || n.TerminalOn() != tc.terminal || n.Command != tc.command || len(team.Warnings) != 0 {
			t.Errorf("%s: desktop %v terminal %v command %q warnings %v", tc.json, n.DesktopOn(), n.TerminalOn(), n.Command, team.Warnings)
		}
	}
}

func TestGroupTargets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		target, others string
		isOthers       bool
		expanded       string
	}{
		{"others-builder", "builder", true, "others-builder"},
		{"others-", "", true, "others-"},
		{"workers", "", false, "builder"},
		{"all", "", false, "all"},
		{"oracle", "", false, "oracle"},
	} {
		others, ok := CutOthers(c.target)
		if others != c.others || ok != c.isOthers {
			t.Errorf("CutOthers(%q) = %q, %v; want %q, %v", c.target, others, ok, c.others, c.isOthers)
		}
		if ok && OthersTarget(others) != c.target {
			t.Errorf("OthersTarget(%q) = %q, want %q", others, OthersTarget(others), c.target)
		}
		if got := ExpandWorkers(c.target); got != c.expanded {
			t.Errorf("ExpandWorkers(%q) = %q, want %q", c.target, got, c.expanded)
		}
	}
}

// TestEveryTeamHasArchitect: whatever settings.json lists, the team has
// an architect, the target of the person's Telegram messages and of the
// startup briefing (internal/hub relies on it).
func TestEveryTeamHasArchitect(t *testing.T) {
	for _, settings := range []string{
		`{}`,
		`{"panes":[{"role":"planner","command":"sh"},{"role":"coder","command":"sh"}]}`,
		`{"panes":[{"role":"architect","transport":"ws"}]}`,
	} {
		team, err := Parse([]byte(settings))
		if err != nil {
			t.Fatal(err)
		}
		if tg, err := team.Resolve(RoleArchitect); err != nil || tg.Kind != TargetMember {
			t.Errorf("%s: architect resolves to %+v, %v", settings, tg, err)
		}
	}
}

// TestWithBackgroundOf: a team keeps another's background slots (hm
// reload keeps the running slots' settings until hm restart), unless
// their owner is no pane of it or a slot's name is taken.
func TestWithBackgroundOf(t *testing.T) {
	t.Parallel()
	parse := func(s string) *Team {
		t.Helper()
		team, err := Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return team
	}
	tests := []struct {
		name, to, from string
		wantErr        string
		wantSlot       string // a slot name the result resolves
	}{
		{"slots kept", `{"background":{"max":0}}`, `{"background":{"max":2}}`, "", "builder-bg-2"},
		{"slots of a new owner", `{"panes":[{"role":"scribe"}],"background":{"max":0}}`, `{"panes":[{"role":"scribe"}],"background":{"owner":"scribe","max":1}}`, "", "scribe-bg-1"},
		{"owner removed", `{"background":{"max":0}}`, `{"panes":[{"role":"scribe"}],"background":{"owner":"scribe","max":1}}`, `background owner "scribe" is not a pane`, ""},
		{"name taken", `{"panes":[{"role":"builder-bg-1"}],"background":{"max":0}}`, `{"background":{"max":1}}`, `used by two members`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, from := parse(tt.to), parse(tt.from)
			got, err := to.WithBackgroundOf(from)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Background != from.Background || len(got.BackgroundMembers()) != from.Background.Max {
				t.Errorf("background %+v (%d slots), want %+v", got.Background, len(got.BackgroundMembers()), from.Background)
			}
			if m, ok := got.Lookup(tt.wantSlot); !ok || !m.Background {
				t.Errorf("slot %s not resolved: %+v %v", tt.wantSlot, m, ok)
			}
			if len(to.BackgroundMembers()) != 0 {
				t.Errorf("the team copied from was changed")
			}
		})
	}
}

// TestKeepPaneIDs: a pane whose id is its place in the panes list keeps
// the id it had when a pane before it is removed or one is inserted (hm
// reload), unless another pane now has that id; new panes take what is
// free. Ids settings.json gives are never changed.
func TestKeepPaneIDs(t *testing.T) {
	t.Parallel()
	panes := func(entries ...string) *Team {
		t.Helper()
		var list []string
		for _, e := range entries {
			role, id, _ := strings.Cut(e, ":")
			if id != "" {
				list = append(list, `{"role":"`+role+`","id":"`+id+`"}`)
			} else {
				list = append(list, `{"role":"`+role+`"}`)
			}
		}
		team, err := Parse([]byte(`{"panes":[` + strings.Join(list, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return team
	}
	tests := []struct {
		name     string
		old, new []string
		want     map[string]string // role -> pane id
	}{
		{"one before removed", []string{"gone", "keep"}, []string{"keep"}, map[string]string{"keep": "5"}},
		{"one inserted before", []string{"a", "b"}, []string{"x", "a", "b"}, map[string]string{"a": "4", "b": "5", "x": "6"}},
		{"removed and added", []string{"gone", "keep"}, []string{"keep", "fresh"}, map[string]string{"keep": "5", "fresh": "4"}},
		{"an id given takes it", []string{"a", "b"}, []string{"a", "c:5", "b"}, map[string]string{"a": "4", "b": "6", "c": "5"}},
		{"ids given stay", []string{"a:9"}, []string{"a:8"}, map[string]string{"a": "8", "architect": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := panes(tt.new...).KeepPaneIDs(panes(tt.old...))
			if err != nil {
				t.Fatal(err)
			}
			for role, id := range tt.want {
				m, ok := got.Lookup(role)
				if !ok || m.PaneID != id {
					t.Errorf("%s: pane id %q (found %v), want %q", role, m.PaneID, ok, id)
				}
				if byID, ok := got.Lookup(id); !ok || byID.Role != role {
					t.Errorf("id %s resolves to %+v, want %s", id, byID, role)
				}
			}
		})
	}
}
