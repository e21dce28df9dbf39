package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// shellsUnderTest are the interactive shells a pane may run, each started
// without its rc files. zsh runs without interactivecomments (its default),
// where "#" does not start a comment: typing messages as "# ..." comments
// executed $(...) there (issue 14).
var shellsUnderTest = []struct {
	name, bin, args string
}{
	{"dash", "dash", "-i"},
	{"bash", "bash", "--norc --noprofile -i"},
	{"zsh", "zsh", "-f -i"},
	{"fish", "fish", "--no-config -i"},
	{"ksh", "ksh", "-i"},
}

// TestShellPaneNeverExecutes types every shell-metacharacter payload into
// real bash, zsh, dash, fish and ksh panes: none of them ever runs any part
// of a message, and each gets only the pointer line naming the file that
// holds the message.
func TestShellPaneNeverExecutes(t *testing.T) {
	t.Parallel()
	for _, sh := range shellsUnderTest {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			bin, err := exec.LookPath(sh.bin)
			if err != nil {
				t.Fatalf("%s is needed for this test (make deps installs it): %v", sh.bin, err)
			}
			dir := t.TempDir()
			marker := func(i int) string { return filepath.Join(dir, fmt.Sprintf("pwned-%d", i)) }
			payloads := []string{
				"$(touch %s)",
				"`touch %s`",
				"; touch %s",
				"| touch %s",
				"&& touch %s",
				"|| touch %s",
				"\ntouch %s\n",
				"\r touch %s \x1b[201~\ntouch %[1]s",
				"' ; touch %s ; '",
				"\" ; touch %s ; \"",
				"\\\ntouch %s",
				"(touch %s)",
				"{touch,%s}",
				"%%(touch %s)",
				strings.Repeat("x", 5000) + " $(touch %s)",
				"!touch %s",
				"\x1b[200~touch %s\x1b[201~\r",
			}
			stages := newStageLog()
			p := startPane(t, Spec{
				Command:    "exec " + bin + " " + sh.args,
				Profile:    ProfileShell,
				Timing:     Profile{Idle: 150 * time.Millisecond},
				Dir:        dir,
				Env:        []string{"PATH=" + os.Getenv("PATH"), "PS1=$ ", "HOME=" + dir, "TERM=xterm", "fish_greeting="},
				PointerDir: filepath.Join(dir, ".squidrun", "coord", "full-agent-messages"),
			})
			for i, pl := range payloads {
				id := fmt.Sprintf("sh-%d", i+1)
				p.Enqueue(Delivery{MessageID: id, Content: "(ARCH #" + fmt.Sprint(i+1) + "): " + fmt.Sprintf(pl, marker(i+1)), Report: stages.reporter(id)})
			}
			last := fmt.Sprintf("sh-%d", len(payloads))
			poll.For(t, 90*time.Second, func() error { return poll.Want(stages.final(last), "every message typed") })
			// The shell still runs what a person types.
			okFile := filepath.Join(dir, "alive")
			if _, err := p.Write([]byte("touch " + okFile + "\r")); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 15*time.Second, func() error {
				_, err := os.Stat(okFile)
				return poll.Want(err == nil, "the shell to run a typed command")
			})
			for i := range payloads {
				if _, err := os.Stat(marker(i + 1)); err == nil {
					t.Errorf("%s executed message %d (%q)", sh.name, i+1, payloads[i])
				}
				id := fmt.Sprintf("sh-%d", i+1)
				st := stages.get(id)
				if len(st) == 0 || st[0].Kind != StageTyped || st[0].Pointer == "" {
					t.Errorf("message %d: stages %+v; want typed, with the body in a pointer file", i+1, st)
					continue
				}
				body, err := os.ReadFile(st[0].Pointer)
				if err != nil || !strings.Contains(string(body), marker(i+1)) {
					t.Errorf("message %d: pointer file %s: %v %q", i+1, st[0].Pointer, err, body)
				}
			}
			screen := string(p.Replay())
			if !strings.Contains(screen, ": '"+AgentPrefix+"message in .squidrun/coord/full-agent-messages/sh-1.txt [hm:sh-1]'") {
				t.Errorf("the pane does not show the pointer line for sh-1:\n%q", screen[max(0, len(screen)-2000):])
			}
			if strings.Contains(screen, "touch "+marker(1)) {
				t.Errorf("message text reached the shell pane")
			}
		})
	}
}

// TestUnmarkedScreenFallsBackToQuiet: a profile whose ready markers never
// appear (markers a user got wrong, or a CLI that changed its look) still
// gets its messages once the screen has stood still for Profile.Unmarked,
// instead of holding the queue forever; a busy marker still holds it.
func TestUnmarkedScreenFallsBackToQuiet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		markers   Markers
		delivered bool
	}{
		{"no marker visible", Markers{Ready: []string{"never-shown-prompt"}}, true},
		{"busy marker visible", Markers{Ready: []string{"never-shown-prompt"}, Busy: []string{">"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, logPath := fakeSpec(t)
			spec.Timing.Screen = tt.markers
			spec.Timing.Unmarked = 300 * time.Millisecond
			p := startPane(t, spec)
			p.Enqueue(Delivery{MessageID: "fb-1", Content: "(ARCH #1): hello"})
			if tt.delivered {
				poll.For(t, 15*time.Second, func() error {
					return poll.Want(len(readPrompts(t, logPath)) == 1, "one prompt, have %d", len(readPrompts(t, logPath)))
				})
				return
			}
			time.Sleep(1500 * time.Millisecond) // five times Unmarked: long enough to have typed
			if n := len(readPrompts(t, logPath)); n != 0 {
				t.Fatalf("%d prompts typed into a busy screen", n)
			}
		})
	}
}
