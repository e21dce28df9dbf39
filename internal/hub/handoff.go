package hub

import (
	"context"
	"encoding/json"
	"fmt"

	"hm/internal/atomicfile"
	"hm/journal/report"
)

// writeHandoff rebuilds handoffs/session.md if the ledger changed it, and
// the signed ledger checkpoint beside it.
func (h *Hub) writeHandoff(ctx context.Context) ([]byte, error) {
	data, err := report.Handoff(ctx, h.Ledger, report.Options{SessionID: h.SessionID(), Session: h.Session, Roles: report.RolesFromTeam(h.Team)})
	if err != nil {
		h.log.Warn("build handoff", "err", err)
		return nil, err
	}
	if _, err := report.WriteHandoff(h.Layout.Handoffs(), data); err != nil {
		h.log.Warn("write handoff", "err", err)
		return nil, err
	}
	if err := h.writeCheckpoint(ctx); err != nil {
		h.log.Warn("write ledger checkpoint", "err", err)
	}
	return data, nil
}

// writeCheckpoint writes handoffs/ledger-checkpoint.json (SPEC §9) when the
// chain head moved since the last one.
func (h *Hub) writeCheckpoint(ctx context.Context) error {
	cp, err := h.Ledger.Checkpoint(ctx)
	if err != nil {
		return err
	}
	if cp.LastEventID == h.checkpointed.Load() && cp.LastEventID != 0 {
		return nil
	}
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(h.Layout.LedgerCheckpoint(), append(data, '\n'), 0o600); err != nil {
		return err
	}
	h.checkpointed.Store(cp.LastEventID)
	return nil
}

func (h *Hub) finalHandoff(ctx context.Context) { _, _ = h.writeHandoff(ctx) }
