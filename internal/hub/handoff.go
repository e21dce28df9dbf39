package hub

import (
	"context"

	"hm/journal/report"
)

// writeHandoff rebuilds handoffs/session.md if the ledger changed it. (The
// signed ledger checkpoint beside it, handoffs/ledger-checkpoint.json, is
// the ledger's own: its writer rewrites it with every head it signs.)
func (h *Hub) writeHandoff(ctx context.Context) ([]byte, error) {
	data, err := report.Handoff(ctx, h.Ledger, report.Options{SessionID: h.SessionID(), Session: h.Session, Roles: report.RolesFromTeam(h.Team())})
	if err != nil {
		h.log.Warn("build handoff", "err", err)
		return nil, err
	}
	if _, err := report.WriteHandoff(h.Layout.Handoffs(), data); err != nil {
		h.log.Warn("write handoff", "err", err)
		return nil, err
	}
	return data, nil
}

func (h *Hub) finalHandoff(ctx context.Context) { _, _ = h.writeHandoff(ctx) }
