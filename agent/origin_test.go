package agent

import (
	"testing"
	"time"

	"hm/internal/ground/poll"
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
