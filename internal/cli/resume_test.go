package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// TestHookResume: the session id a CLI's hooks give (`hm hook <cli>
// SessionStart`, the input's session_id) is the session hm resumes when
// the pane's program dies: the next run is the profile's resume form
// (Claude Code and Gemini CLI --resume <id>, Codex CLI resume <id>), and
// hm status says "resumed"; a pane whose hooks reported none restarts
// blank, "restarted" (#37). The fake agent stands in for each CLI and logs
// the arguments of each run.
func TestHookResume(t *testing.T) {
	t.Parallel()
	const id = "5d1c2b7e-93a4-4f0e-8c61-2a7b9e0d4f35"
	for _, tc := range []struct {
		cli, event string // the hook run ("" none)
		profile    string
		want       []string // the restarted run's arguments
		words      string   // hm status's PROGRAM
	}{
		{"claude", "SessionStart", "claude", []string{"--resume", id}, "resumed (1 restart, 1 resumed)"},
		{"codex", "SessionStart", "codex", []string{"resume", id}, "resumed (1 restart, 1 resumed)"},
		{"gemini", "SessionStart", "gemini", []string{"--resume", id}, "resumed (1 restart, 1 resumed)"},
		{"", "", "claude", []string{}, "restarted (1 restart)"},
	} {
		t.Run(tc.profile+"/"+tc.event, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			argsLog := filepath.Join(dir, "args.jsonl")
			hh := startHookHub(t, fmt.Sprintf(`{"panes":[
 {"role":"architect","transport":"ws"},
 {"role":"builder","command":%q,"profile":%q}]}`, "FAKEAGENT_ARGS_LOG="+argsLog+" "+fakeAgentBin(t), tc.profile))
			pid := func() int {
				for _, p := range hh.Snapshot(context.Background()).Panes {
					if p.Role == "builder" {
						return p.PID
					}
				}
				return 0
			}
			poll.For(t, 30*time.Second, func() error {
				return poll.Want(pid() != 0 && len(testutil.FakeAgentArgs(t, argsLog)) == 1, "builder's program runs")
			})
			if tc.cli != "" {
				hh.hook(t, tc.cli, tc.event, []byte(`{"hook_event_name":"SessionStart","source":"startup","session_id":"`+id+`"}`))
			}
			first := pid()
			if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 30*time.Second, func() error {
				return poll.Want(len(testutil.FakeAgentArgs(t, argsLog)) == 2 && pid() != 0 && pid() != first, "builder's program runs again, runs %q", testutil.FakeAgentArgs(t, argsLog))
			})
			if got := testutil.FakeAgentArgs(t, argsLog)[1]; !slices.Equal(got, tc.want) {
				t.Errorf("the restarted program got arguments %q, want %q", got, tc.want)
			}
			vars := hh.env()
			delete(vars, "HM_TOKEN")
			delete(vars, "SQUIDRUN_ROLE")
			var out, errb bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
			if code := MainContext(context.Background(), []string{"status"}, env); code != ExitOK {
				t.Fatalf("hm status: exit %d, %s", code, errb.String())
			}
			if !regexp.MustCompile(`(?m)^builder\s+2\s+\d+\s+\S+\s+` + regexp.QuoteMeta(tc.words) + `\s`).MatchString(out.String()) {
				t.Errorf("hm status does not say builder's program was %q:\n%s", tc.words, out.String())
			}
		})
	}
}
