package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/roles"
)

// fixtureScreen loads a screen fixture: its lines are the screen's rows
// (padded to 40), the cursor on the last non-empty row, after its text.
func fixtureScreen(t *testing.T, path string) Screen {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	s := Screen{Cols: 120, Rows: 40, Lines: make([]string, 40), CursorVisible: true}
	copy(s.Lines, lines)
	s.CursorRow = len(lines) - 1
	s.CursorCol = len([]rune(lines[len(lines)-1]))
	return s
}

// TestClassifyFixtures: handmade screens of Claude Code, Codex and Gemini
// CLI (ready, busy, permission prompt, auth dialog), a shell and the fake
// agent are classified by their profiles; <profile>_<state>-<variant>.txt
// is one more screen of that state (Claude Code 2.1.197's ready screen in
// each permission mode, its prompt row "❯" once trimmed).
func TestClassifyFixtures(t *testing.T) {
	t.Parallel()
	want := map[string]Readiness{"ready": Ready, "busy": Busy, "permission": Blocked, "auth": Blocked}
	files, err := filepath.Glob(filepath.Join("testdata", "screens", "*.txt"))
	if err != nil || len(files) < 12 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		profile, state, _ := strings.Cut(name, "_")
		state, _, _ = strings.Cut(state, "-") // claude_ready-plan: a variant
		t.Run(name, func(t *testing.T) {
			s := fixtureScreen(t, f)
			got, marker := ProfileFor(profile).Classify(s)
			if got != want[state] {
				t.Errorf("%s: %v (marker %q), want %v", name, got, marker, want[state])
			}
		})
	}
}

// TestClassifyMarkers: busy wins over ready, blocked over both; a profile
// with ready markers and none visible is not ready; old text above the
// bottom rows does not count.
func TestClassifyMarkers(t *testing.T) {
	t.Parallel()
	prof := Profile{Screen: Markers{Ready: []string{"> "}, Busy: []string{"working"}, Blocked: []string{"Proceed?"}, Rows: 2}}
	tests := []struct {
		name   string
		lines  []string
		cursor int
		want   Readiness
	}{
		{"prompt", []string{"hello", "> "}, 1, Ready},
		{"busy and prompt", []string{"working 3", "> "}, 1, Busy},
		{"dialog", []string{"Proceed?", "1. yes"}, 1, Blocked},
		{"no prompt yet", []string{"starting"}, 0, ReadyUnknown},
		{"old busy line scrolled up", []string{"working 3", "done", "x", "> "}, 3, Ready},
		{"cursor above blank rows", []string{"> ", "", ""}, 0, Ready},
		{"empty screen", nil, 0, ReadyUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Screen{Lines: append(tt.lines, make([]string, 5)...), CursorRow: tt.cursor}
			if got, _ := prof.Classify(s); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, _ := ProfileFor(ProfileDefault).Classify(Screen{Lines: []string{"anything"}}); got != Ready {
		t.Errorf("default profile without markers: %v", got)
	}
}

// TestProfileTable: settings.json "profiles" add profiles and override
// built-in ones field by field.
func TestProfileTable(t *testing.T) {
	t.Parallel()
	team, err := roles.Parse([]byte(`{"profiles":{"Aider":{"ready":["aider> "],"busy":["Thinking"],"quietMs":250,"enterDelayMs":90,` +
		`"echoWaitMs":700,"pasted":["[paste"],"erase":"\u0017","interrupt":"\u0003","rawInput":true},"claude":{"enterDelayMs":300},"gemini":{"rawInput":false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	extra := ProfilesFromSettings(team.Profiles)
	tests := []struct {
		name       string
		enterDelay time.Duration
		idle       time.Duration
		ready      []string
		// echo wait, pasted markers, erase, interrupt, raw input
		echoWait         time.Duration
		pasted           []string
		erase, interrupt string
		raw              bool
	}{
		{"aider", 90 * time.Millisecond, 250 * time.Millisecond, []string{"aider> "}, 700 * time.Millisecond, []string{"[paste"}, "\x17", "\x03", true},
		{"claude", 300 * time.Millisecond, defaultIdle, builtinProfiles[ProfileClaude].Screen.Ready, 0, []string{"[Pasted text #"}, "", escKey, true},
		{"codex", 250 * time.Millisecond, defaultIdle, builtinProfiles[ProfileCodex].Screen.Ready, 0, []string{"[Pasted Content "}, "", escKey, true},
		{"gemini", 120 * time.Millisecond, defaultIdle, builtinProfiles[ProfileGemini].Screen.Ready, 0, []string{"[Pasted Text: "}, "", escKey, false},
		{"unknown", 150 * time.Millisecond, defaultIdle, nil, 0, nil, "", "", false},
	}
	for _, tt := range tests {
		p := lookupProfile(tt.name, extra)
		if p.EnterDelay != tt.enterDelay || p.Idle != tt.idle || strings.Join(p.Screen.Ready, "|") != strings.Join(tt.ready, "|") ||
			p.EchoWait != tt.echoWait || strings.Join(p.Screen.Pasted, "|") != strings.Join(tt.pasted, "|") ||
			p.Erase != tt.erase || p.Interrupt != tt.interrupt || p.RawInput != tt.raw {
			t.Errorf("%s: %+v", tt.name, p)
		}
	}
}

// TestReadinessDialogNotTyped: a program that first shows a menu taking
// Enter as a choice (an auth or trust dialog) gets no message while the
// menu is on its screen; the message is typed once its prompt shows. With
// readiness judged from silence alone the message went into the menu.
func TestReadinessDialogNotTyped(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_DIALOG_MS=1500")
	spec.Profile = "fakecli"
	spec.Profiles = map[string]Profile{"fakecli": {Screen: Markers{Ready: []string{">"}, Blocked: []string{"Do you want to proceed?"}}}}
	p := startPane(t, spec)
	stages := newStageLog()
	for _, urgent := range []bool{false, true} {
		id := "dlg-" + map[bool]string{false: "normal", true: "urgent"}[urgent]
		p.Enqueue(Delivery{MessageID: id, Content: "(ARCH #1): hello " + id, Urgent: urgent, Report: stages.reporter(id)})
	}
	poll.For(t, 5*time.Second, func() error {
		return poll.Want(strings.HasPrefix(p.Status().Readiness, "blocked: Do you want to proceed?"), "status readiness %q", p.Status().Readiness)
	})
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(stages.final("dlg-normal") && stages.final("dlg-urgent"), "final stages")
	})
	prompts := readPrompts(t, logPath)
	if len(prompts) != 2 {
		t.Fatalf("prompts %+v", prompts)
	}
	for _, pr := range prompts {
		if strings.HasPrefix(pr.Prompt, "DIALOG:") {
			t.Errorf("typed into the dialog: %q", pr.Prompt)
		}
	}
	if p.Status().Readiness != "ready" {
		t.Errorf("readiness %q", p.Status().Readiness)
	}
}
