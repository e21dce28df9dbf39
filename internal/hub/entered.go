package hub

import (
	"context"
	"os"
	"path/filepath"

	"hm/agent"
	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/journal"
)

// enteredLogPath is runtime/panes/<role>.entered (agent.Spec.EnteredLog).
func enteredLogPath(lay layout.Layout, role string) string {
	return filepath.Join(lay.PaneLogs(), role+".entered")
}

// recoverEntered reads what the panes of the previous run recorded as
// entered (their first Enter written) and records those messages as
// routed in the ledger where the kill came before the ledger's own record:
// their programs took them, so Recover must not type them again. It runs
// before any pane starts, then empties the logs.
func (h *Hub) recoverEntered(ctx context.Context) {
	members := append(h.Team().Members(), h.Team().BackgroundMembers()...)
	for _, m := range members {
		path := enteredLogPath(h.Layout, m.Role)
		ids, err := agent.ReadEntered(path)
		if err != nil {
			h.log.Warn("read entered log", "role", m.Role, "err", err)
			continue
		}
		for _, id := range ids {
			row, err := h.Ledger.Get(ctx, id)
			if err != nil || row.Status.Rank() >= status.Routed.Rank() {
				continue
			}
			if _, err := h.Ledger.Advance(ctx, journal.EnteredBeforeStop(id, m.Role)); err != nil {
				h.log.Warn("record an entered message", "id", id, "err", err)
				continue
			}
			h.log.Info("message entered before the last stop, recorded as submitted", "id", id, "role", m.Role)
		}
		if len(ids) > 0 {
			if err := os.Truncate(path, 0); err != nil {
				h.log.Warn("empty entered log", "role", m.Role, "err", err)
			}
		}
	}
}
