package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
)

// paneOrigin finds role's pane in the hub's status as /status serves it
// (JSON), with how its program came to be.
func paneOrigin(t *testing.T, th *testHub, role string) (map[string]any, error) {
	t.Helper()
	data, err := json.Marshal(th.h.Snapshot(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Panes []map[string]any `json:"panes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Panes {
		if p["role"] == role {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no pane %s in %s", role, data)
}

// TestStatusOrigin: the hub's status says how each pane's program came to
// be (#37): the architect's was started, the builder's ended after its
// first prompt and was restarted, with the count. The session handoff's
// role table says the same.
func TestStatusOrigin(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{settings: fmt.Sprintf(`{"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","command":%q,"profile":"default"}]}`,
		agentCmd(root, "architect"), agentCmd(root, "builder", "FAKEAGENT_EXIT_AFTER=1"))})
	for _, tc := range []struct {
		role, origin, words string
	}{
		{"architect", "started", "started"},
		{"builder", "restarted", "restarted (1 restart)"},
	} {
		poll.For(t, 30*time.Second, func() error {
			p, err := paneOrigin(t, th, tc.role)
			if err != nil {
				return err
			}
			return poll.Want(p["origin"] == tc.origin && p["originWords"] == tc.words && p["resumes"] == 0.0,
				"%s: origin %v, originWords %v, resumes %v; want %s, %q", tc.role, p["origin"], p["originWords"], p["resumes"], tc.origin, tc.words)
		})
	}
	th.stop() // the handoff is written once more at shutdown
	data, err := os.ReadFile(layout.Layout{Root: root}.Session())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"| role | header | pane | program | sent | last seq |", "| architect | ARCH | 1 | started |", "| builder | BUILDER | 2 | restarted (1 restart) |"} {
		if !strings.Contains(string(data), line) {
			t.Errorf("the handoff has no %q:\n%s", line, data)
		}
	}
}
