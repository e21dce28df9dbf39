package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestDriftIsReported: a pane whose profile's ready markers match nothing
// on its screen gets its message typed after the unmarked wait, and its
// Status carries the drift: the profile, the command, the CLI's --version
// where the command runs claude, codex or gemini itself, and the screen's
// last rows. A pane whose markers match carries none.
func TestDriftIsReported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, profile, ready, version string
		cli                           bool // the command is a "claude" that answers --version
	}{
		{"markers match", "fakecli", ">", "", false},
		{"no marker matches", "fakecli", "NEVER-SHOWN", "", false},
		{"no marker matches a CLI with a version", ProfileClaude, "NEVER-SHOWN", "9.9.9 (Fake Code)", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t)
			spec.Profile = tc.profile
			spec.Profiles = map[string]Profile{tc.profile: {Screen: Markers{Ready: []string{tc.ready}}, Unmarked: 300 * time.Millisecond}}
			if tc.cli {
				bin := filepath.Join(spec.Dir, "bin")
				script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + tc.version + "'; exit 0; fi\nexec " + spec.Command + "\n"
				if err := os.MkdirAll(bin, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o700); err != nil {
					t.Fatal(err)
				}
				spec.Command = "claude"
				for i, kv := range spec.Env {
					if strings.HasPrefix(kv, "PATH=") {
						spec.Env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(kv, "PATH=")
					}
				}
			}
			p := startPane(t, spec)
			stages := newStageLog()
			p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): hello", Report: stages.reporter("m1")})
			poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("m1"), "m1 submitted") })
			if got := readPrompts(t, logPath); len(got) != 1 {
				t.Fatalf("prompts %+v, want the one message", got)
			}
			d := p.Status().Drift
			if tc.ready == ">" {
				if d != nil {
					t.Fatalf("drift %+v on a pane whose markers match", d)
				}
				return
			}
			if d == nil {
				t.Fatal("no drift after typing on the unmarked wait")
			}
			if d.Profile != tc.profile || d.Command != spec.Command || d.Version != tc.version || len(d.Rows) == 0 || d.At.IsZero() {
				t.Errorf("drift %+v: want profile %q, command %q, version %q, the screen's rows", d, tc.profile, spec.Command, tc.version)
			}
			if w := d.Warning(); !strings.Contains(w, tc.profile) || !strings.Contains(w, spec.Command) || !strings.Contains(w, d.Rows[len(d.Rows)-1]) {
				t.Errorf("warning %q names neither the profile, the command nor the screen", w)
			}
		})
	}
}

// TestCommandProgram: the drift warning names the CLI's version, found by
// running the command's program word with --version; a command that runs
// the CLI through env (as the real-CLI suite's `exec env VARS… gemini`
// does) has the CLI as that word, not env.
func TestCommandProgram(t *testing.T) {
	for _, tc := range []struct{ command, want string }{
		{"claude", "claude"},
		{"exec claude --resume", "claude"},
		{"FOO=1 BAR=2 codex", "codex"},
		{"exec env HOME=/tmp/h NO_COLOR=1 /opt/cli/bin/gemini --yolo", "/opt/cli/bin/gemini"},
		{"env -i -u TERM PATH=/bin gemini", "gemini"},
		{"/usr/bin/env -C /tmp codex", "codex"},
		{"env", ""},
		{"claude | tee log", ""},
		{"exec env 'A=b c' gemini", ""},
	} {
		if got := commandProgram(tc.command); got != tc.want {
			t.Errorf("commandProgram(%q) = %q, want %q", tc.command, got, tc.want)
		}
	}
}

// TestStartingRunGetsLongerUnmarkedWait: a run that has never shown its
// prompt is starting, not drifted: a still screen that matches no marker
// (here a start-up menu the profile does not know) gets four times the
// unmarked wait before hm types into it. Before, a loaded make test run
// had hm type into Gemini CLI 15 s after its banner, before its input box
// was up, and the session line merged with the next message.
func TestStartingRunGetsLongerUnmarkedWait(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_DIALOG_MS=1500", "FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0")
	spec.Timing = hardTiming("> ", false, true)
	spec.Timing.Unmarked = 500 * time.Millisecond // 2 s while starting, more than the menu's 1.5 s
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "s1", Content: "(ARCH #1): after the start-up menu", Report: stages.reporter("s1")})
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(stages.final("s1"), "s1 final, stages %v", stageKinds(stages.get("s1")))
	})
	settle(t, logPath)
	for _, r := range readPrompts(t, logPath) {
		if strings.HasPrefix(r.Prompt, "DIALOG:") {
			t.Errorf("typed into the start-up menu: %q", r.Prompt)
		}
	}
}
