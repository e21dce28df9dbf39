package hub

import (
	"context"
	"os"
	"time"

	"hm/broker"
	"hm/internal/ground/hooknote"
	"hm/internal/ground/msgid"
	"hm/journal/report"
	"hm/roles"
)

// startup types each pane's first message (session line, brief, briefing)
// and re-routes what earlier sessions left pending.
func (h *Hub) startup(ctx context.Context) {
	// First of all: a message a hook printed is not expired, listed as
	// pending or re-routed.
	h.readHookNotes()
	now := time.Now()
	// Messages too old to deliver late are failed first, so the briefing
	// lists them as expired_session failures (SPEC §10), not as pending.
	stale, err := h.Broker.ExpireStale(ctx)
	if err != nil {
		h.log.Error("expire pending messages", "err", err)
	}
	opts := report.Options{SessionID: h.SessionID(), Session: h.Session, Now: now, Roles: report.RolesFromTeam(h.Team())}
	briefing, err := report.Briefing(ctx, h.Ledger, opts)
	if err != nil {
		h.log.Error("build briefing", "err", err)
	} else if err := report.WriteBriefing(h.Layout.Briefing(), briefing); err != nil {
		h.log.Error("write briefing", "err", err)
	}
	if h.panes != nil {
		h.greet(ctx, h.Team().Members(), briefing, now)
	}
	delivered, expired, err := h.Broker.Recover(ctx)
	if err != nil {
		h.log.Error("recover pending messages", "err", err)
	} else if expired += stale; delivered+expired > 0 {
		h.log.Info("pending messages from earlier sessions", "delivered", delivered, "expired", expired)
	}
}

// greet types the first message of the session into the pane of each of
// ms the hub hosts: its session line and brief, the briefing too for the
// architect (hm up, and a pane hm reload added). A pane whose program this
// hub adopted gets none: the program ran on through the hub's restart with
// its context, and a greeting would cost it a turn (a model request) to
// read what it knows.
func (h *Hub) greet(ctx context.Context, ms []roles.Member, briefing []byte, now time.Time) {
	team := h.Team()
	for _, m := range ms {
		if !h.panes.Hosted(m.Role) {
			continue
		}
		if p, ok := h.panes.get(m.Role); ok && p.Status().Adopted {
			h.log.Info("no session greeting for an adopted pane: its program kept its context", "role", m.Role)
			continue
		}
		var content string
		if m.Role == roles.RoleArchitect {
			content = report.ArchitectFirstMessage(briefing, now) + "\n\n" + team.Brief(m.Role)
		} else {
			content = report.PaneFirstMessage(m.Role, now, ".squidrun/handoffs/session.md") + "\n\n" + team.Brief(m.Role)
		}
		if _, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: m.Role, Content: content, Raw: true,
			Channel: broker.ChannelSystem, MessageID: msgid.Session(h.Session, m.Role), HubID: true, SessionScoped: true}); err != nil {
			h.log.Warn("startup message", "role", m.Role, "err", err)
		}
	}
}

// readHookNotes records what hooks printed into their agents' context
// under an earlier hub that died before their claim-acks reached it
// (internal/ground/hooknote), before anything pending is expired, listed
// or re-routed: a message the agent has is not handed to it again. A note
// is removed once recorded, and one that cannot be read is logged and
// removed (it would fail the same way at every start); one the ledger
// could not record is kept for the next start.
func (h *Hub) readHookNotes() {
	notes, err := hooknote.Read(h.Layout.HookNotes())
	if err != nil {
		h.log.Warn("hook notes", "err", err)
		return
	}
	for _, f := range notes {
		if f.Err != nil {
			h.log.Warn("hook note dropped", "file", f.Path, "err", f.Err)
		} else {
			n := f.Note
			got, err := h.Broker.RecordPrinted(n.Role, n.Hook, n.AtMs, n.IDs)
			if err != nil {
				h.log.Warn("hook note kept for the next start", "file", f.Path, "err", err)
				continue
			}
			h.log.Info("a hook printed these before the hub that leased them died: delivered.context",
				"file", f.Path, "role", n.Role, "hook", n.Hook, "recorded", got, "noted", len(n.IDs))
		}
		if err := os.Remove(f.Path); err != nil {
			h.log.Warn("hook note", "file", f.Path, "err", err)
		}
	}
}
