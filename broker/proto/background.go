package proto

import (
	"encoding/json"
	"fmt"

	"hm/internal/ground/status"
)

// Background-agent results (SPEC §8): the "result" object of the response to
// a background-agent frame. Fields are declared in the order of their JSON
// names, which is the order the hub has always sent them in.

// BgResult is one of BgSpawnResult, BgKillResult, BgKillAllResult,
// BgListResult, BgTargetMapResult or BgRefusal.
type BgResult interface{ bgResult() }

// BgSpawnResult answers spawn.
type BgSpawnResult struct {
	Alias       string `json:"alias"`
	OK          bool   `json:"ok"`
	OwnerPaneID string `json:"ownerPaneId"`
	PaneID      string `json:"paneId"`
	Status      string `json:"status"`
}

// BgKillResult answers kill.
type BgKillResult struct {
	Alias  string `json:"alias"`
	OK     bool   `json:"ok"`
	PaneID string `json:"paneId"`
	Reason string `json:"reason"`
}

// BgKillAllResult answers kill-all: the aliases of the slots it ended.
type BgKillAllResult struct {
	Killed []string `json:"killed"`
	OK     bool     `json:"ok"`
}

// BgListResult answers list: the running slots, in slot order.
type BgListResult struct {
	Agents []BgAgent `json:"agents"`
	OK     bool      `json:"ok"`
}

// BgAgent is one running slot in BgListResult (and in hm status).
type BgAgent struct {
	Alias            string `json:"alias"`
	Command          string `json:"command"`
	CreatedAtMs      int64  `json:"createdAtMs"`
	LastActivityAtMs int64  `json:"lastActivityAtMs"`
	OwnerPaneID      string `json:"ownerPaneId"`
	PaneID           string `json:"paneId"`
	PID              int    `json:"pid"`
	Queued           int    `json:"queued"`
	Status           string `json:"status"`
	// State is the slot pane's state as a pane's in hm status (ready,
	// busy, waiting_for_human, exited); set only in the hub's status.
	State string `json:"state,omitempty"`
}

// BgTargetMapResult answers target-map: every slot's alias and pane id, in
// slot order.
type BgTargetMapResult struct {
	Aliases     []string `json:"aliases"`
	MaxAgents   int      `json:"maxAgents"`
	OK          bool     `json:"ok"`
	OwnerPaneID string   `json:"ownerPaneId"`
	PaneIDs     []string `json:"paneIds"`
}

// BgRefusal answers a refused action; OK is false and Status says why
// (capacity_reached, slot_unavailable, owner_binding_violation,
// invalid_target, not_running, bad_request, not_registered).
type BgRefusal struct {
	Error  string      `json:"error,omitempty"`
	OK     bool        `json:"ok"`
	Status status.Code `json:"status"`
}

func (BgSpawnResult) bgResult()     {}
func (BgKillResult) bgResult()      {}
func (BgKillAllResult) bgResult()   {}
func (BgListResult) bgResult()      {}
func (BgTargetMapResult) bgResult() {}
func (BgRefusal) bgResult()         {}

// DecodeBgResult decodes the result of a background-agent response to
// action: a BgRefusal when the response was not ok, otherwise the action's
// result type.
func DecodeBgResult(action string, ok bool, raw json.RawMessage) (BgResult, error) {
	if !ok {
		return decodeBg[BgRefusal](raw)
	}
	switch action {
	case "spawn":
		return decodeBg[BgSpawnResult](raw)
	case "kill":
		return decodeBg[BgKillResult](raw)
	case "kill-all":
		return decodeBg[BgKillAllResult](raw)
	case "list":
		return decodeBg[BgListResult](raw)
	case "target-map":
		return decodeBg[BgTargetMapResult](raw)
	}
	return nil, fmt.Errorf("unknown background-agent action %q", action)
}

func decodeBg[T BgResult](raw json.RawMessage) (BgResult, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decode background-agent result: %w", err)
	}
	return v, nil
}
