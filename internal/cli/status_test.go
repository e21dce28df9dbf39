package cli

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/agent"
	"hm/internal/ground/poll"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestPaneState: `hm status` shows why a pane exited and that its messages
// wait for the person in attach (#15).
func TestPaneState(t *testing.T) {
	for _, tc := range []struct {
		p    hub.PaneStatus
		want string
	}{
		{hub.PaneStatus{State: "ready"}, "ready"},
		{hub.PaneStatus{State: "ready", Waiting: "waiting for the person in attach"}, "ready, waiting for the person in attach"},
		{hub.PaneStatus{State: "waiting_for_human", Waiting: "held while the agent waits for a person"}, "waiting_for_human, held while the agent waits for a person"},
		{hub.PaneStatus{State: "exited", LastError: "exit 3"}, "exited (exit 3)"},
		{hub.PaneStatus{State: "busy", LastError: "exit 3"}, "busy"},
	} {
		if got := paneState(tc.p); got != tc.want {
			t.Errorf("paneState(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestStatusPanesGolden: hm status's pane table says how each pane's
// program came to be — started, adopted, restarted or resumed, with the
// restarts (#37) — in the words the hub gives (testdata/status/panes.golden;
// -update rewrites it).
func TestStatusPanesGolden(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	panes := []hub.PaneStatus{
		{Role: "architect", PaneID: "1", PID: 101, State: "ready", Origin: agent.OriginStarted, OriginWords: agent.Status{Origin: agent.OriginStarted}.OriginWords(),
			Readiness: "ready", LastActivityMs: ago(5 * time.Second), Command: "claude"},
		{Role: "builder", PaneID: "2", PID: 102, State: "busy", Origin: agent.OriginAdopted, Adopted: true, OriginWords: agent.Status{Origin: agent.OriginAdopted}.OriginWords(),
			Readiness: "busy: esc to interrupt", Queued: 1, LastActivityMs: ago(time.Second), Command: "codex"},
		{Role: "oracle", PaneID: "3", PID: 103, State: "ready", Origin: agent.OriginResumed, Restarts: 2, Resumes: 1,
			OriginWords: agent.Status{Origin: agent.OriginResumed, Restarts: 2, Resumes: 1}.OriginWords(), Readiness: "ready", LastActivityMs: ago(time.Minute), Command: "gemini"},
		{Role: "reviewer", PaneID: "4", State: "exited", LastError: "exited with code 3", Origin: agent.OriginRestarted, Restarts: 1,
			OriginWords: agent.Status{Origin: agent.OriginRestarted, Restarts: 1}.OriginWords(), Command: "./review.sh"},
	}
	var b strings.Builder
	printPanes(&b, panes, now)
	checkGolden(t, "testdata/status/panes.golden", b.String())
}

// TestStatusListsObligations: `hm status` lists the open obligations, in
// text and --json (issue #34: they were in no status view), and says so
// when none is open.
func TestStatusListsObligations(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	port := strconv.Itoa(h.Port)
	hm := cliOnHub(t, root, port)
	run := func(args ...string) (int, string, string) { return hm(args[0], args[1:]...) }
	if code, out, errOut := run("status"); code != ExitOK || !strings.Contains(out, "obligations: none open\n") {
		t.Fatalf("hm status before any: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run("send", "--role", "architect", "builder", "[ACK REQUIRED] review the parser"); code != ExitOK {
		t.Fatalf("send: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "obligations: 1 open"},
		{[]string{"status"}, "  builder owes architect an answer to ARCH #1, open "},
		{[]string{"status", "--json"}, `"owner": "builder"`},
		{[]string{"status", "--json"}, `"sessionId": "app-session-1"`},
	} {
		code, out, errOut := run(tc.args...)
		if code != ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("hm %s: exit %d, stdout lacks %q:\n%s\nstderr %q", strings.Join(tc.args, " "), code, tc.want, out, errOut)
		}
	}
}

// TestStatusShowsDrift: a pane typed into on the unmarked wait (its
// profile's ready marker never shows) is a warning in `hm status` (text
// and --json) and `hm doctor`, naming the CLI's command and the screen.
func TestStatusShowsDrift(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	hm := cliOnHub(t, hh.root, strconv.Itoa(hh.Port))
	run := func(args ...string) string {
		_, out, _ := hm(args[0], args[1:]...)
		return out
	}
	// The session's first message to builder goes in after the unmarked
	// wait (15 s).
	var drift *hub.DriftStatus
	poll.For(t, 2*time.Minute, func() error {
		var st hub.Status
		if err := json.Unmarshal([]byte(run("status", "--json")), &st); err != nil {
			return err
		}
		for _, p := range st.Panes {
			if p.Role == "builder" {
				drift = p.Drift
			}
		}
		return poll.Want(drift != nil, "no drift on builder yet")
	})
	if drift.Command != "sleep 3600" || !strings.Contains(drift.Warning, `profile "never"`) || !strings.Contains(drift.Warning, "sleep 3600") {
		t.Errorf("drift %+v: want the command and the profile named", drift)
	}
	if out := run("status"); !strings.Contains(out, "warning: builder: "+drift.Warning) {
		t.Errorf("hm status shows no drift warning:\n%s", out)
	}
	if out := run("doctor"); !regexp.MustCompile(`(?m)^warn\s+profile\s+builder: .*no ready marker`).MatchString(out) {
		t.Errorf("hm doctor shows no drift warning:\n%s", out)
	}
}
