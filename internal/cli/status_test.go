package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"

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
