package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
	"hm/roles"
)

// TestOriginWords: how a pane's program came to be, in the words hm
// status, the cockpit and the handoff show (#37).
func TestOriginWords(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		want string
	}{
		{Status{}, "started"},
		{Status{Origin: OriginStarted}, "started"},
		{Status{Origin: OriginAdopted, Adopted: true}, "adopted"},
		{Status{Origin: OriginRestarted, Restarts: 1}, "restarted (1 restart)"},
		{Status{Origin: OriginRestarted, Restarts: 3, Resumes: 2}, "restarted (3 restarts, 2 resumed)"},
		{Status{Origin: OriginResumed, Restarts: 2, Resumes: 2}, "resumed (2 restarts, 2 resumed)"},
	} {
		if got := tc.st.OriginWords(); got != tc.want {
			t.Errorf("OriginWords(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// TestPaneOrigin: a pane's first program is "started"; once it ended and
// hm started it again, "restarted", with the count (#37).
func TestPaneOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		command string
		restart bool
		want    Origin
	}{
		{"running", "", false, OriginStarted},
		{"ended and restarted", "exit 3", true, OriginRestarted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, _ := fakeSpec(t)
			if tc.command != "" {
				spec.Command = tc.command
			}
			spec.Restart = tc.restart
			p := startPane(t, spec)
			poll.For(t, 20*time.Second, func() error {
				st := p.Status()
				ok := st.Origin == tc.want && (tc.want == OriginStarted) == (st.Restarts == 0)
				return poll.Want(ok, "origin %q after %d restarts (%q), want %q", st.Origin, st.Restarts, st.OriginWords(), tc.want)
			})
		})
	}
}

// TestResumeOnRestart: a program whose hooks reported its CLI session is
// started again in its profile's resume form with that session, one
// without a session (or with an id that is no shell word) blank; a
// resumed run that ended before its hooks reported anything is not
// resumed again (#37). The fake agent stands in for the CLI and logs the
// arguments each run got.
func TestResumeOnRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		session string // reported by the first run's hooks ("" none)
		want    [][]string
		origins []Origin // after each restart
	}{
		{"session reported", "0b5e3c1a-7d2f-4c9e-9a41-5f0c2d8e6b17", [][]string{{}, {"--resume", "0b5e3c1a-7d2f-4c9e-9a41-5f0c2d8e6b17"}, {}},
			[]Origin{OriginResumed, OriginRestarted}},
		{"no session", "", [][]string{{}, {}, {}}, []Origin{OriginRestarted, OriginRestarted}},
		{"not a shell word", "x; touch pwned", [][]string{{}, {}, {}}, []Origin{OriginRestarted, OriginRestarted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			argsLog := filepath.Join(dir, "args.jsonl")
			spec, _ := fakeSpec(t, "FAKEAGENT_ARGS_LOG="+argsLog, "FAKEAGENT_EXIT_AFTER=1")
			spec.Restart = true
			spec.MaxBackoff = 50 * time.Millisecond
			spec.Timing.Resume = CommandPlaceholder + " --resume " + SessionPlaceholder
			p := startPane(t, spec)
			runs := func(n int) {
				poll.For(t, 30*time.Second, func() error {
					return poll.Want(len(testutil.FakeAgentArgs(t, argsLog)) >= n && p.Status().PID != 0, "%d runs started, have %v", n, testutil.FakeAgentArgs(t, argsLog))
				})
			}
			runs(1)
			if tc.session != "" {
				err := p.ReportSession(tc.session)
				if ValidSession(tc.session) != (err == nil) {
					t.Fatalf("ReportSession(%q) = %v", tc.session, err)
				}
			}
			for i, want := range tc.origins {
				p.Enqueue(Delivery{MessageID: fmt.Sprintf("m%d", i), Content: fmt.Sprintf("(ARCH #%d): end this run", i+1)})
				runs(i + 2)
				if st := p.Status(); st.Origin != want || st.Restarts != i+1 {
					t.Errorf("after restart %d: origin %q, %d restarts (%s); want %q", i+1, st.Origin, st.Restarts, st.OriginWords(), want)
				}
				resumed := 0
				for _, o := range tc.origins[:i+1] {
					if o == OriginResumed {
						resumed++
					}
				}
				if said := strings.Count(string(p.Replay()), "[hm] resuming the CLI's session: "); said != resumed {
					t.Errorf("after restart %d: the pane's screen says %d times that it resumes, want %d", i+1, said, resumed)
				}
			}
			got := testutil.FakeAgentArgs(t, argsLog)
			if len(got) != len(tc.want) {
				t.Fatalf("runs' arguments %q, want %q", got, tc.want)
			}
			for i := range got {
				if !slices.Equal(got[i], tc.want[i]) {
					t.Errorf("run %d got arguments %q, want %q", i+1, got[i], tc.want[i])
				}
			}
			if _, err := os.Stat(filepath.Join(spec.Dir, "pwned")); err == nil {
				t.Error("the session id ran as a shell command")
			}
		})
	}
}

// TestResumeForms: the command line that resumes each CLI's session, as
// the CLIs take it (Claude Code and Gemini CLI --resume <id>, Codex CLI
// [flags] resume <id>), and settings.json "profiles" "resume" over it
// (#37).
func TestResumeForms(t *testing.T) {
	const id = "0b5e3c1a-7d2f-4c9e-9a41-5f0c2d8e6b17"
	custom := ProfilesFromSettings(map[string]roles.ProfileSettings{
		"claude": {Resume: CommandPlaceholder}, // resumes nothing
		"aider":  {Resume: "aider --restore-chat-history --session " + SessionPlaceholder},
	})
	for _, tc := range []struct {
		profile  string
		profiles map[string]Profile
		command  string
		want     string // "" = restarted blank
	}{
		{ProfileClaude, nil, "claude --dangerously-skip-permissions", "claude --dangerously-skip-permissions --resume " + id},
		{ProfileCodex, nil, "codex --dangerously-bypass-approvals-and-sandbox", "codex --dangerously-bypass-approvals-and-sandbox resume " + id},
		{ProfileGemini, nil, "gemini --yolo", "gemini --yolo --resume " + id},
		{ProfileShell, nil, "bash", ""},
		{ProfileDefault, nil, "./agent.sh", ""},
		{ProfileClaude, custom, "claude", ""},
		{"aider", custom, "aider", "aider --restore-chat-history --session " + id},
	} {
		p := lookupProfile(tc.profile, tc.profiles)
		got, ok := resumeCommand(p.Resume, tc.command, id)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s %q: resume form %q (%v), want %q", tc.profile, tc.command, got, ok, tc.want)
		}
	}
}
