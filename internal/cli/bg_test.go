package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"hm/broker/proto"
)

// TestPrintBgResult pins hm-bg's output for each background-agent result,
// and checks that --json prints what it printed when it decoded the hub's
// answer into a map.
func TestPrintBgResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		action    string
		ok        bool
		result    proto.BgResult
		respError string
		code      int
		stdout    string
		stderr    string
	}{
		{name: "spawn", action: "spawn", ok: true,
			result: proto.BgSpawnResult{OK: true, Alias: "builder-bg-1", PaneID: "bg-2-1", OwnerPaneID: "2", Status: "starting"},
			stdout: "spawned builder-bg-1 (pane bg-2-1, owner pane 2): starting\n"},
		{name: "kill", action: "kill", ok: true,
			result: proto.BgKillResult{OK: true, Alias: "builder-bg-2", PaneID: "bg-2-2", Reason: "killed"},
			stdout: "killed builder-bg-2\n"},
		{name: "kill-all", action: "kill-all", ok: true,
			result: proto.BgKillAllResult{OK: true, Killed: []string{"builder-bg-1", "builder-bg-3"}},
			stdout: "killed [builder-bg-1 builder-bg-3]\n"},
		{name: "list none", action: "list", ok: true,
			result: proto.BgListResult{OK: true, Agents: []proto.BgAgent{}},
			stdout: "no background agents running\n"},
		{name: "list", action: "list", ok: true,
			result: proto.BgListResult{OK: true, Agents: []proto.BgAgent{
				{Alias: "builder-bg-1", PaneID: "bg-2-1", OwnerPaneID: "2", Command: "codex", Status: "running", PID: 4194301, CreatedAtMs: 1700000000123, LastActivityAtMs: 1700000004567},
				{Alias: "builder-bg-3", PaneID: "bg-2-3", OwnerPaneID: "2", Command: "codex --full-auto", Status: "starting", PID: 77, CreatedAtMs: 1700000000999, LastActivityAtMs: -62135596800000, Queued: 2},
			}},
			stdout: "ALIAS         PANE    STATUS    PID      COMMAND\n" +
				"builder-bg-1  bg-2-1  running   4194301  codex\n" +
				"builder-bg-3  bg-2-3  starting  77       codex --full-auto\n"},
		{name: "target-map", action: "target-map", ok: true,
			result: proto.BgTargetMapResult{OK: true, OwnerPaneID: "2", MaxAgents: 2, Aliases: []string{"builder-bg-1", "builder-bg-2"}, PaneIDs: []string{"bg-2-1", "bg-2-2"}},
			stdout: "owner pane 2, max 2: [builder-bg-1 builder-bg-2] [bg-2-1 bg-2-2]\n"},
		{name: "refused by the slots", action: "spawn",
			result:    proto.BgRefusal{Status: "capacity_reached", Error: "all 2 background slots are running"},
			respError: "capacity_reached", code: ExitFailed,
			stderr: "hm-bg: capacity_reached: all 2 background slots are running\n"},
		{name: "refused by the broker", action: "list",
			result:    proto.BgRefusal{Status: "slot_unavailable"},
			respError: "background slots are not available in this hub", code: ExitFailed,
			stderr: "hm-bg: slot_unavailable: background slots are not available in this hub\n"},
		{name: "refused by the broker, not the owner", action: "spawn",
			result:    proto.BgRefusal{Status: "owner_binding_violation"},
			respError: "only builder or the operator may control background slots", code: ExitFailed,
			stderr: "hm-bg: owner_binding_violation: only builder or the operator may control background slots\n"},
		{name: "refused without a status", action: "kill",
			result:    proto.BgRefusal{},
			respError: "not_registered", code: ExitFailed,
			stderr: "hm-bg: not_registered\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire, err := json.Marshal(tt.result)
			if err != nil {
				t.Fatal(err)
			}
			result, err := proto.DecodeBgResult(tt.action, tt.ok, wire)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			env := Env{Stdout: &stdout, Stderr: &stderr}
			if code := printBgResult(env, result, tt.respError, false); code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stdout\n%s\nstderr\n%s\nwant exit %d, stdout\n%s\nstderr\n%s", code, &stdout, &stderr, tt.code, tt.stdout, tt.stderr)
			}

			// --json
			var typed, old bytes.Buffer
			printJSON(&typed, result)
			var m map[string]any
			if err := json.Unmarshal(wire, &m); err != nil {
				t.Fatal(err)
			}
			printJSON(&old, m)
			if typed.String() != old.String() {
				t.Errorf("--json prints\n%s\nwhere it printed\n%s", &typed, &old)
			}
			stdout.Reset()
			stderr.Reset()
			if code := printBgResult(Env{Stdout: &stdout, Stderr: &stderr}, result, tt.respError, true); code != tt.code || stdout.Len() != 0 || stderr.String() != tt.stderr {
				t.Errorf("with --json: exit %d, stdout %q, stderr %q", code, &stdout, &stderr)
			}
		})
	}
}
