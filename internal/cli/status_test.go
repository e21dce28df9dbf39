package cli

import (
	"testing"

	"hm/internal/hub"
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
