package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
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
