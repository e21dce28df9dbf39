package hub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
)

func fakeTeam(root string, builderEnv ...string) string {
	return fmt.Sprintf(`{"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","command":%q,"profile":"default"},
	 {"role":"oracle","command":%q,"profile":"default"}],
	 "background":{"owner":"builder","max":2,"command":%q}}`,
		agentCmd(root, "architect"), agentCmd(root, "builder", builderEnv...), agentCmd(root, "oracle"),
		agentCmd(root, "bg", "FAKEAGENT_DONE_WORD=finish"))
}

func TestHubPanesStartupDeliveryReceiptShutdown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{settings: fakeTeam(root)})
	archLog := filepath.Join(root, "architect.jsonl")

	// The first prompt of every pane is its session line (+ brief; the
	// architect also gets the briefing).
	for _, role := range []string{"architect", "builder", "oracle"} {
		poll.For(t, 30*time.Second, func() error {
			ps := prompts(t, filepath.Join(root, role+".jsonl"))
			return poll.Want(len(ps) > 0 && strings.Contains(ps[0], "# SQUIDRUN SESSION: "+strings.ToUpper(role[:1])+role[1:]+" - Started "), "%s session line", role)
		})
	}
	if ps := prompts(t, archLog); !strings.Contains(ps[0], "Startup Briefing") && !strings.Contains(ps[0], "riefing") {
		t.Errorf("architect's first prompt has no briefing: %.300q", ps[0])
	}

	b := th.as("builder", false)
	ack := send(t, b, proto.Frame{Target: "architect", Content: "tests pass", MessageID: "m-typed"})
	if !ack.OK || ack.Seq != 1 || ack.Header != "BUILDER" {
		t.Fatalf("ack %+v", ack)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, archLog), "(BUILDER #1): tests pass"), "prompt submitted")
	})
	ps := prompts(t, archLog)
	last := ps[len(ps)-1]
	if !strings.HasPrefix(last, "[AGENT MSG - reply via hm-send] (BUILDER #1): tests pass") || !strings.Contains(last, "[hm:m-typed]") {
		t.Fatalf("typed prompt = %q", last)
	}
	// The program's output after Enter proves the submission (routed is
	// recorded at the Enter, the proof a moment later).
	poll.For(t, 30*time.Second, func() error {
		r := row(t, th, "m-typed")
		return poll.Want(r.Status == "routed" && r.AckStatus == status.Submitted, "routed and submitted, row %+v", r)
	})
	// A receipt (what `hm receipt` sends) proves it.
	op := th.as("user", false)
	if err := op.WriteJSON(ctxT(t), proto.Frame{Type: "message-ack", MessageID: "m-typed"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		r := row(t, th, "m-typed")
		return poll.Want(r.Status == "acked" && r.AckStatus == status.DeliveredVerified, "acked")
	})

	// Status lists the panes.
	st := th.h.Snapshot(context.Background())
	if len(st.Panes) != 3 || st.Panes[0].Role != "architect" || st.Panes[0].PID == 0 {
		t.Fatalf("status panes = %+v", st.Panes)
	}

	th.stop()
	lay := layout.Layout{Root: root}
	if _, err := os.Stat(lay.HubJSON()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hub.json left behind: %v", err)
	}
	data, err := os.ReadFile(lay.Session())
	if err != nil || !strings.Contains(string(data), "(BUILDER #1): tests pass") {
		t.Errorf("handoff at shutdown: %v\n%s", err, data)
	}
	if st, err := os.Stat(lay.Session()); err == nil && st.Mode().Perm() != 0o600 {
		t.Errorf("session.md mode %o", st.Mode().Perm())
	}
}

var _ = context.Background
var _ = time.Second
