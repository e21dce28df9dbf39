package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/poll"
)

// TestStuckShownInStatusAndHandoff: a pane program that never shows what is
// typed (echo off) gets every message stuck; `hm status` lists the stuck
// message with its reason (text and --json), and `hm handoff` has it under
// Stuck Deliveries (#15: "hm status shows it, the handoff lists it").
// hm status also shows how the profile reads each pane's screen.
func TestStuckShownInStatusAndHandoff(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, fmt.Sprintf(`{"profiles":{"default":{"quietMs":50,"echoWaitMs":150}},"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","transport":"ws"}]}`, agentCommand(root, "architect", "FAKEAGENT_ECHO=0")))
	h := startHub(t, root)
	defer h.stop()
	op := dialAs(t, h, "builder", false)
	ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "architect", MessageID: "stuck-1",
		Content: "(BUILDER #1): never shown on the screen"})
	if err != nil || !ack.OK {
		t.Fatalf("send: %+v %v", ack, err)
	}
	var text string
	poll.For(t, 60*time.Second, func() error {
		r := run(t, root, nil, "hm", "status")
		text = r.stdout
		return poll.Want(strings.Contains(text, "stuck-1"), "hm status lists stuck-1:\n%s", text)
	})
	for _, want := range []string{"stuck: ", "BUILDER #1 (stuck-1) builder → architect", "never appeared on the screen"} {
		if !strings.Contains(text, want) {
			t.Errorf("hm status lacks %q:\n%s", want, text)
		}
	}
	r := run(t, root, nil, "hm", "status", "--json")
	var st struct {
		Panes []struct{ Role, Readiness string }             `json:"panes"`
		Stuck []struct{ MessageID, From, To, Reason string } `json:"stuck"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil {
		t.Fatalf("hm status --json: %v %+v", err, r)
	}
	if !slices.ContainsFunc(st.Stuck, func(m struct{ MessageID, From, To, Reason string }) bool {
		return m.MessageID == "stuck-1" && m.From == "builder" && m.To == "architect" && strings.Contains(m.Reason, "never appeared")
	}) {
		t.Errorf("hm status --json lacks the stuck message: %+v", st.Stuck)
	}
	// The screen as the profile reads it (the default profile has no
	// markers: ready unless busy or blocked).
	if !slices.Contains(st.Panes, struct{ Role, Readiness string }{"architect", "ready"}) || !strings.Contains(text, "SCREEN") {
		t.Errorf("hm status lacks the pane's readiness: %+v\n%s", st.Panes, text)
	}
	r = run(t, root, nil, "hm", "handoff")
	if r.code != 0 {
		t.Fatalf("hm handoff: %+v", r)
	}
	_, stuck, _ := strings.Cut(r.stdout, "## Stuck Deliveries")
	stuck, _, _ = strings.Cut(stuck, "\n## ")
	if !strings.Contains(stuck, "| builder | architect | BUILDER #1 |") || !strings.Contains(stuck, "never appeared on the screen") {
		t.Errorf("handoff's Stuck Deliveries lacks the message:\n%s", stuck)
	}
}
