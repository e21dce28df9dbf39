package proto

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestBgResultJSON pins the bytes of every background-agent result (SPEC §8)
// and checks them against the map[string]any the hub encoded before the
// results were typed: encoding/json sorts map keys, so the structs must
// declare their fields in that order.
func TestBgResultJSON(t *testing.T) {
	agent := BgAgent{Alias: "builder-bg-1", Command: "codex --full-auto", CreatedAtMs: 1700000000123, LastActivityAtMs: 1700000004567,
		OwnerPaneID: "2", PaneID: "bg-2-1", PID: 4194301, Queued: 1, Status: "running"}
	tests := []struct {
		name   string
		action string
		ok     bool
		result BgResult
		old    map[string]any
		want   string
	}{
		{"spawn", "spawn", true,
			BgSpawnResult{OK: true, Alias: "builder-bg-1", PaneID: "bg-2-1", OwnerPaneID: "2", Status: "starting"},
			map[string]any{"ok": true, "alias": "builder-bg-1", "paneId": "bg-2-1", "ownerPaneId": "2", "status": "starting"},
			`{"alias":"builder-bg-1","ok":true,"ownerPaneId":"2","paneId":"bg-2-1","status":"starting"}`},
		{"kill", "kill", true,
			BgKillResult{OK: true, Alias: "builder-bg-2", PaneID: "bg-2-2", Reason: "killed"},
			map[string]any{"ok": true, "alias": "builder-bg-2", "paneId": "bg-2-2", "reason": "killed"},
			`{"alias":"builder-bg-2","ok":true,"paneId":"bg-2-2","reason":"killed"}`},
		{"kill-all", "kill-all", true,
			BgKillAllResult{OK: true, Killed: []string{"builder-bg-1", "builder-bg-3"}},
			map[string]any{"ok": true, "killed": []string{"builder-bg-1", "builder-bg-3"}},
			`{"killed":["builder-bg-1","builder-bg-3"],"ok":true}`},
		{"kill-all none", "kill-all", true,
			BgKillAllResult{OK: true, Killed: []string{}},
			map[string]any{"ok": true, "killed": []string{}},
			`{"killed":[],"ok":true}`},
		{"list", "list", true,
			BgListResult{OK: true, Agents: []BgAgent{agent}},
			map[string]any{"ok": true, "agents": []map[string]any{{
				"alias": "builder-bg-1", "paneId": "bg-2-1", "ownerPaneId": "2", "command": "codex --full-auto",
				"status": "running", "pid": 4194301, "createdAtMs": int64(1700000000123), "lastActivityAtMs": int64(1700000004567),
				"queued": 1}}},
			`{"agents":[{"alias":"builder-bg-1","command":"codex --full-auto","createdAtMs":1700000000123,"lastActivityAtMs":1700000004567,` +
				`"ownerPaneId":"2","paneId":"bg-2-1","pid":4194301,"queued":1,"status":"running"}],"ok":true}`},
		{"list none", "list", true,
			BgListResult{OK: true, Agents: []BgAgent{}},
			map[string]any{"ok": true, "agents": []map[string]any{}},
			`{"agents":[],"ok":true}`},
		{"target-map", "target-map", true,
			BgTargetMapResult{OK: true, OwnerPaneID: "2", MaxAgents: 3, Aliases: []string{"builder-bg-1", "builder-bg-2", "builder-bg-3"}, PaneIDs: []string{"bg-2-1", "bg-2-2", "bg-2-3"}},
			map[string]any{"ok": true, "ownerPaneId": "2", "maxAgents": 3, "aliases": []string{"builder-bg-1", "builder-bg-2", "builder-bg-3"}, "paneIds": []string{"bg-2-1", "bg-2-2", "bg-2-3"}},
			`{"aliases":["builder-bg-1","builder-bg-2","builder-bg-3"],"maxAgents":3,"ok":true,"ownerPaneId":"2","paneIds":["bg-2-1","bg-2-2","bg-2-3"]}`},
		{"refusal by the slots", "spawn", false,
			BgRefusal{Status: "capacity_reached", Error: "all 3 background slots are running"},
			map[string]any{"ok": false, "status": "capacity_reached", "error": "all 3 background slots are running"},
			`{"error":"all 3 background slots are running","ok":false,"status":"capacity_reached"}`},
		{"refusal by the broker", "list", false,
			BgRefusal{Status: "owner_binding_violation"},
			map[string]any{"ok": false, "status": "owner_binding_violation"},
			`{"ok":false,"status":"owner_binding_violation"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.result)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("JSON\n got %s\nwant %s", got, tt.want)
			}
			old, err := json.Marshal(tt.old)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(old) {
				t.Errorf("JSON differs from the former map encoding\n got %s\n old %s", got, old)
			}
			back, err := DecodeBgResult(tt.action, tt.ok, got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.result) {
				t.Errorf("decoded %#v, want %#v", back, tt.result)
			}
		})
	}
}

func TestBgResponseJSON(t *testing.T) {
	resp := Response{Type: TypeResponse, RequestID: "r4", Result: BgRefusal{Status: "not_registered"}, Error: "not_registered"}
	got, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"response","requestId":"r4","ok":false,"result":{"ok":false,"status":"not_registered"},"error":"not_registered"}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeBgResultErrors(t *testing.T) {
	if _, err := DecodeBgResult("launch", true, json.RawMessage(`{}`)); err == nil {
		t.Error("unknown action decoded")
	}
	if _, err := DecodeBgResult("list", true, json.RawMessage(`{"agents":7}`)); err == nil {
		t.Error("bad list decoded")
	}
	if r, err := DecodeBgResult("list", false, json.RawMessage(`null`)); err != nil || r != (BgRefusal{}) {
		t.Errorf("null refusal = %#v, %v", r, err)
	}
}
