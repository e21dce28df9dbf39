package hub

import (
	"context"

	"hm/journal/report"
)

// writeHandoff rebuilds handoffs/session.md if the ledger changed it. (The
// signed ledger checkpoint beside it, handoffs/ledger-checkpoint.json, is
// the ledger's own: its writer rewrites it with every head it signs.)
func (h *Hub) writeHandoff(ctx context.Context) ([]byte, error) {
	data, err := report.Handoff(ctx, h.Ledger, report.Options{SessionID: h.SessionID(), Session: h.Session, Roles: h.handoffRoles()})
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

// handoffRoles is the team for the handoff's role table, each role a pane
// of this hub hosts with how its program came to be
// (agent.Status.OriginWords, as hm status and the cockpit say it).
func (h *Hub) handoffRoles() []report.RoleInfo {
	rs := report.RolesFromTeam(h.Team())
	if h.panes == nil {
		return rs
	}
	words := map[string]string{}
	for _, st := range h.panes.statuses() {
		words[st.Role] = st.OriginWords()
	}
	for i := range rs {
		rs[i].Program = words[rs[i].Role]
	}
	return rs
}

func (h *Hub) finalHandoff(ctx context.Context) { _, _ = h.writeHandoff(ctx) }
