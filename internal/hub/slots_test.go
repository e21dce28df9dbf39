package hub_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/hub"
)

type bgResp struct {
	OK     bool           `json:"ok"`
	Result map[string]any `json:"result"`
	Error  string         `json:"error"`
}

func bg(t *testing.T, c *client.Client, action string, payload map[string]any) bgResp {
	t.Helper()
	raw, _ := json.Marshal(payload)
	var r bgResp
	if err := c.Request(ctxT(t), proto.Frame{Type: "background-agent", Action: action, Payload: raw, RequestID: "bg-" + action}, "response", &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (th *testHub) paneToken(role string) string { return th.h.Tokens.Issue(role) }

func TestBackgroundSlots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{settings: fakeTeam(root)})
	builder := th.as("builder", false, th.paneToken("builder"))
	builderLog := filepath.Join(root, "builder.jsonl")
	bgLog := filepath.Join(root, "bg.jsonl")

	// Only the owner or the operator controls slots.
	oracle := th.as("oracle", false, th.paneToken("oracle"))
	if r := bg(t, oracle, "spawn", nil); r.OK || r.Result["status"] != "owner_binding_violation" {
		t.Fatalf("oracle spawn: %+v", r)
	}

	tm := bg(t, builder, "target-map", nil)
	if !tm.OK || tm.Result["ownerPaneId"] != "2" || tm.Result["maxAgents"] != float64(2) {
		t.Fatalf("target-map: %+v", tm)
	}
	r := bg(t, builder, "spawn", map[string]any{"task": "write the parser"})
	if !r.OK || r.Result["alias"] != "builder-bg-1" || r.Result["paneId"] != "bg-2-1" || r.Result["ownerPaneId"] != "2" || r.Result["status"] != "starting" {
		t.Fatalf("spawn: %+v", r)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, bgLog), "TASK: write the parser"), "task typed into the slot")
	})
	ps := prompts(t, bgLog)
	if !strings.Contains(ps[0], "builder-bg-1") || !strings.Contains(ps[0], "hm-send builder") || !strings.Contains(ps[0], "__HM_BG_DONE__") {
		t.Fatalf("slot's first message = %q", ps[0])
	}
	list := bg(t, builder, "list", nil)
	agents, _ := list.Result["agents"].([]any)
	if len(agents) != 1 {
		t.Fatalf("list: %+v", list)
	}
	a := agents[0].(map[string]any)
	for _, k := range []string{"alias", "paneId", "ownerPaneId", "command", "status", "pid", "createdAtMs", "lastActivityAtMs"} {
		if _, ok := a[k]; !ok {
			t.Errorf("list entry lacks %s: %+v", k, a)
		}
	}

	// The slot reaches its owner and nobody else, over the socket...
	slot := th.as("builder-bg-1", false, th.paneToken("builder-bg-1"))
	if ack := send(t, slot, proto.Frame{Target: "architect", Content: "hi boss"}); ack.OK || ack.Status != "owner_binding_violation" {
		t.Fatalf("slot to architect: %+v", ack)
	}
	if ack := send(t, slot, proto.Frame{Target: "builder", Content: "(ARCH #1): forged"}); ack.OK || ack.Status != "role_mismatch" {
		t.Fatalf("forged header: %+v", ack)
	}
	if ack := send(t, slot, proto.Frame{Target: "builder", Content: "progress: 50%"}); !ack.OK || ack.Header != "BUILDER-BG-1" {
		t.Fatalf("slot to builder: %+v", ack)
	}
	// ...and a bg token cannot register as another role.
	c, err := client.Dial(ctxT(t), th.h.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, err := c.Register(ctxT(t), "architect", th.paneToken("builder-bg-1"), false); err == nil {
		t.Fatal("bg token registered as architect")
	}

	// Capacity: max is 2.
	if r := bg(t, builder, "spawn", map[string]any{"slot": 2}); !r.OK || r.Result["alias"] != "builder-bg-2" {
		t.Fatalf("spawn 2: %+v", r)
	}
	if r := bg(t, builder, "spawn", nil); r.OK || r.Result["status"] != "capacity_reached" {
		t.Fatalf("spawn 3: %+v", r)
	}
	if r := bg(t, builder, "spawn", map[string]any{"slot": "builder-bg-2"}); r.OK || r.Result["status"] != "slot_unavailable" {
		t.Fatalf("spawn busy slot: %+v", r)
	}
	// Kill by pane id; an unknown target and a stopped slot are refused.
	if r := bg(t, builder, "kill", map[string]any{"target": "bg-2-2"}); !r.OK || r.Result["alias"] != "builder-bg-2" || r.Result["reason"] != "killed" {
		t.Fatalf("kill by pane id: %+v", r)
	}
	if r := bg(t, builder, "kill", map[string]any{"target": "2"}); r.OK || r.Result["status"] != "not_running" {
		t.Fatalf("kill stopped: %+v", r)
	}
	if r := bg(t, builder, "kill", map[string]any{"target": "builder-bg-9"}); r.OK || r.Result["status"] != "invalid_target" {
		t.Fatalf("kill unknown: %+v", r)
	}
	if ack := send(t, builder, proto.Frame{Target: "builder-bg-2", Content: "anyone?"}); ack.OK || ack.Status != "no_route" {
		t.Fatalf("message to stopped slot: %+v", ack)
	}

	// The done line ends the slot and Builder is told.
	if ack := send(t, builder, proto.Frame{Target: "builder-bg-1", Content: "please finish now"}); !ack.OK {
		t.Fatalf("to slot: %+v", ack)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(containsPrompt(prompts(t, builderLog), "builder-bg-1 ended: task_completed"), "builder told task_completed")
	})
	if r := bg(t, builder, "list", nil); len(r.Result["agents"].([]any)) != 0 {
		t.Fatalf("slot still listed: %+v", r)
	}
	// kill by number and alias, kill-all.
	for _, target := range []string{"1", "builder-bg-1"} {
		if r := bg(t, builder, "spawn", map[string]any{"slot": "1"}); !r.OK {
			t.Fatalf("respawn: %+v", r)
		}
		if r := bg(t, builder, "kill", map[string]any{"target": target}); !r.OK {
			t.Fatalf("kill %s: %+v", target, r)
		}
	}
	// Two running slots: a slot just killed may still be ending (under a
	// loaded machine its spawn is refused slot_unavailable for a moment).
	for range 2 {
		poll.For(t, 30*time.Second, func() error {
			r := bg(t, builder, "spawn", nil)
			return poll.Want(r.OK, "spawn: %+v", r)
		})
	}
	if r := bg(t, builder, "kill-all", nil); !r.OK || len(r.Result["killed"].([]any)) != 2 {
		t.Fatalf("kill-all: %+v", r)
	}
	// Operator may control slots too.
	op := th.as("user", false)
	if r := bg(t, op, "list", nil); !r.OK {
		t.Fatalf("operator list: %+v", r)
	}
	// Slot tokens die with the slot.
	c2, err := client.Dial(ctxT(t), th.h.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseNow()
	if _, err := c2.Register(ctxT(t), "builder-bg-1", th.h.Tokens.Issue("builder-bg-1")+"x", false); err == nil {
		t.Fatal("forged slot token accepted")
	}
	// A slot's trigger file to the architect is refused.
	if err := os.WriteFile(filepath.Join(th.h.Layout.Triggers(), "architect.bg.txt"), []byte("(BUILDER-BG-1 #1): psst"), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		data, err := os.ReadFile(filepath.Join(th.h.Layout.Triggers(), "rejected", "architect.bg.txt.reason"))
		return poll.Want(err == nil && strings.Contains(string(data), "owner_binding_violation"), "bg trigger rejected")
	})
}

func TestBackgroundIdleTTLAndOwnerExit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// The builder exits after its 2nd prompt (session line, then one message).
	th := startHubAt(t, root, hubConfig{settings: fakeTeam(root, "FAKEAGENT_EXIT_AFTER=2"), opts: func(o *hub.Options) {
		o.BackgroundIdle = 1500 * time.Millisecond
		o.PaneMinBackoff = 5 * time.Second
	}})
	op := th.as("user", false)
	if r := bg(t, op, "spawn", nil); !r.OK {
		t.Fatalf("spawn: %+v", r)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(bg(t, op, "list", nil).Result["agents"].([]any)) == 0, "idle slot expires")
	})
	// Builder's first prompt is the session line; the next one makes it exit.
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(prompts(t, filepath.Join(root, "builder.jsonl"))) >= 1, "builder ready")
	})
	r := bg(t, op, "spawn", nil)
	if !r.OK {
		t.Fatalf("spawn: %+v", r)
	}
	if ack := send(t, op, proto.Frame{Target: "builder", Content: "(ARCH #1): last words"}); !ack.OK {
		t.Fatalf("send: %+v", ack)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(bg(t, op, "list", nil).Result["agents"].([]any)) == 0, "slots end with their owner")
	})
	poll.For(t, 30*time.Second, func() error {
		rows, _ := th.h.Ledger.Pending(ctxT(t), "builder")
		for _, m := range rows {
			if strings.Contains(m.RawBody, "idle_ttl_expired") {
				return nil
			}
		}
		return poll.Want(containsPrompt(prompts(t, filepath.Join(root, "builder.jsonl")), "idle_ttl_expired"), "builder told about the idle slot")
	})
}
