package hub_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/internal/ground/poll"
)

// dialAttach opens /attach/<name> with tok as a bearer token; status is the
// HTTP status of a refused upgrade (0 when it succeeded).
func dialAttach(t *testing.T, th *testHub, name, tok string) (c *websocket.Conn, status int) {
	t.Helper()
	url := th.h.URL() + "attach/" + name + "?cols=80&rows=24"
	c, resp, err := websocket.Dial(ctxT(t), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		if resp == nil {
			t.Fatalf("attach %s: %v", name, err)
		}
		return nil, resp.StatusCode
	}
	t.Cleanup(func() { c.CloseNow() })
	return c, 0
}

// TestAttachResolvesOnePane: the pane an /attach/ name opens is the pane
// its token is checked against. A pane id is also a background slot's
// number ("1" is architect's pane and builder's slot 1): the check took
// the team's pane 1 (architect) while the lookup took the slot first, so
// architect's token opened builder-bg-1, read its screen and typed into it.
// A name the team knows now always means the team's pane.
func TestAttachResolvesOnePane(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{settings: fakeTeam(root)})
	archLog, bgLog := filepath.Join(root, "architect.jsonl"), filepath.Join(root, "bg.jsonl")
	builder := th.as("builder", false, th.paneToken("builder"))
	if r := bg(t, builder, "spawn", map[string]any{"task": "write the parser"}); !r.OK {
		t.Fatalf("spawn: %+v", r)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, bgLog), "TASK: write the parser") && len(prompts(t, archLog)) > 0,
			"the slot's task and architect's session line typed")
	})

	arch, slot, op := th.paneToken("architect"), th.paneToken("builder-bg-1"), th.token()
	for _, tc := range []struct {
		name, pane, tok string
		status          int // 0: attached
	}{
		{"architect's token, its pane id", "1", arch, 0},
		{"architect's token, the slot by name", "builder-bg-1", arch, http.StatusUnauthorized},
		{"architect's token, the slot by pane id", "bg-2-1", arch, http.StatusUnauthorized},
		{"the owner's token, its slot", "builder-bg-1", th.paneToken("builder"), http.StatusUnauthorized},
		{"the slot's token, itself", "builder-bg-1", slot, 0},
		{"the slot's token, pane 1", "1", slot, http.StatusUnauthorized},
		{"the operator, pane 1", "1", op, 0},
		{"the operator, the slot", "bg-2-1", op, 0},
		{"the operator, an unknown pane", "nobody", op, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, status := dialAttach(t, th, tc.pane, tc.tok)
			if status != tc.status {
				t.Fatalf("attach %s: status %d, want %d", tc.pane, status, tc.status)
			}
		})
	}

	// What architect types at /attach/1 reaches architect's program, not
	// the slot's.
	c, status := dialAttach(t, th, "1", arch)
	if status != 0 {
		t.Fatalf("attach 1 as architect: %d", status)
	}
	const probe = "typed-through-attach-1"
	for _, b := range []string{probe, "\r"} {
		if err := c.Write(ctxT(t), websocket.MessageBinary, []byte(b)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // an Enter right after typing is a newline to the fake agent
	}
	poll.For(t, 20*time.Second, func() error {
		if containsPrompt(prompts(t, bgLog), probe) {
			return nil // judged below
		}
		return poll.Want(containsPrompt(prompts(t, archLog), probe), "the probe in architect's prompts, have %q", prompts(t, archLog))
	})
	if containsPrompt(prompts(t, bgLog), probe) {
		t.Fatalf("architect's keys reached builder-bg-1: %q", prompts(t, bgLog))
	}
}
