package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestReloadCommand: `hm reload` applies the root's changed settings.json
// to its running hub and says what it did: a pane added, then removed, the
// other untouched; settings the hub refuses change nothing, the error is
// printed and the exit is 1. The golden files under testdata/reload are
// what a person sees.
func TestReloadCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fake := testutil.FakeAgent(t)
	pane := func(role string) string {
		return fmt.Sprintf(`,{"role":%q,"command":%q,"profile":"default"}`, role, "FAKEAGENT_LOG="+filepath.Join(root, role+".jsonl")+" "+fake)
	}
	settings := func(extra string, panes ...string) string {
		return `{"background":{"max":0}` + extra + `,"panes":[{"role":"architect","transport":"ws"},{"role":"builder","transport":"ws"},{"role":"oracle","transport":"ws"}` +
			strings.Join(panes, "") + `]}`
	}
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(lay.Settings(), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(settings("", pane("keep")))
	h, _ := hubtest.Start(t, root, hub.Options{HandoffEvery: time.Hour})
	keepPID := func() int {
		for _, p := range h.Snapshot(t.Context()).Panes {
			if p.Role == "keep" {
				return p.PID
			}
		}
		return 0
	}
	poll.For(t, 30*time.Second, func() error { return poll.Want(keepPID() != 0, "keep runs") })
	pid := keepPID()
	s := session{root: root, port: strconv.Itoa(h.Port)}
	for _, tc := range []struct {
		name, settings string
		args           []string
		wantCode       int
	}{
		{"add", settings("", pane("keep"), pane("fresh")), nil, ExitOK},
		{"same", settings("", pane("keep"), pane("fresh")), nil, ExitOK},
		{"remove-json", settings("", pane("keep")), []string{"--json"}, ExitOK},
		{"needs-restart", settings(`,"waitingForHumanMinutes":1`, pane("keep")), nil, ExitOK},
		{"invalid", `{"panes":[{"role":"all"}]}`, nil, ExitFailed},
	} {
		write(tc.settings)
		got, code := s.run(t, "", append([]string{"reload", "--root", "$ROOT", "--port", "$PORT"}, tc.args...)...)
		if code != tc.wantCode {
			t.Errorf("%s: exit %d, want %d:\n%s", tc.name, code, tc.wantCode, got)
		}
		checkGolden(t, filepath.Join("testdata", "reload", tc.name+".golden"), got)
		if tc.name == "remove-json" {
			out := got[strings.Index(got, "--- stdout\n")+len("--- stdout\n") : strings.Index(got, "--- stderr\n")]
			var res hub.ReloadResult
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Removed) != 1 || res.Removed[0] != "fresh" {
				t.Errorf("--json: %v, %+v", err, res)
			}
		}
	}
	if now := keepPID(); now != pid {
		t.Errorf("the unchanged pane was restarted: pid %d, then %d", pid, now)
	}
}
