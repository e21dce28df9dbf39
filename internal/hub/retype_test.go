package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// TestHubRecordsRetyping: a pane program that exits while a message is
// being typed (FAKEAGENT_EXIT_MID: after 64 bytes of any prompt but its
// run's first) gets the message typed again, whole, after the restart, and
// the ledger says what happened: an attempt event with the reason, the
// attempt count up, then the message submitted once (#15, bad input).
func TestHubRecordsRetyping(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{settings: fmt.Sprintf(`{"panes":[
	 {"role":"builder","command":%q,"profile":"default"},
	 {"role":"architect","transport":"ws"}]}`, agentCmd(root, "builder", "FAKEAGENT_EXIT_MID=64"))})
	log := filepath.Join(root, "builder.jsonl")
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(prompts(t, log)) > 0, "the session line taken")
	})
	a := th.as("architect", false)
	const body = "cut short by the program's exit, then typed again whole"
	if ack := send(t, a, proto.Frame{Target: "builder", Content: body, MessageID: "m-cut"}); !ack.OK {
		t.Fatalf("ack %+v", ack)
	}
	poll.For(t, 30*time.Second, func() error {
		r := row(t, th, "m-cut")
		return poll.Want(r.Status == status.Routed && r.AckStatus == status.Submitted, "routed and submitted, row %+v", r)
	})
	var taken []string
	for _, p := range prompts(t, log) {
		if strings.Contains(p, "[hm:m-cut]") {
			taken = append(taken, p)
		}
	}
	if len(taken) != 1 || !strings.HasSuffix(taken[0], "(ARCH #1): "+body+" [hm:m-cut]") {
		t.Fatalf("the program took %q; want the message once, whole", taken)
	}
	r := row(t, th, "m-cut")
	evs, err := th.h.Ledger.Events(context.Background(), "m-cut")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var reason string
	for _, e := range evs {
		names = append(names, string(e.Event))
		if e.Event == status.EventAttempt {
			var d struct{ Pane, Error string }
			_ = json.Unmarshal(e.Detail, &d)
			reason = d.Pane + ": " + d.Error
		}
	}
	if r.Attempt != 1 || !strings.HasPrefix(reason, "builder: pane program exited while the message was being typed") {
		t.Errorf("attempt %d, events %v, attempt reason %q; want one attempt, the program's exit mid-typing", r.Attempt, names, reason)
	}
}
