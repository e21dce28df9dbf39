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
		{hub.PaneStatus{State: "idle"}, "idle"},
		{hub.PaneStatus{State: "idle", Waiting: "waiting for the person in attach"}, "idle, waiting for the person in attach"},
		{hub.PaneStatus{State: "exited", LastError: "exit 3"}, "exited (exit 3)"},
		{hub.PaneStatus{State: "busy", LastError: "exit 3"}, "busy"},
	} {
		if got := paneState(tc.p); got != tc.want {
			t.Errorf("paneState(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
