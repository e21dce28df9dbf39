package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/internal/msgid"
	"hm/internal/periodic"
	"hm/roles"
)

// A pane that waits for a person (agent.StateWaitingForHuman: a dialog on
// its screen, or its CLI's Notification hook asked for a permission) for
// longer than the team's WaitingNotice gets the human one Telegram line,
// once per waiting spell: the spell ends when the pane is in any other
// state, and only a new spell gets a new line (docs/protocol.md
// § "Liveness"). The line is a system message to telegram, so the ledger
// (and the handoff built from it) records it too.

// waitingNotice is how long a pane waits for a person before the line; 0
// is off.
func (h *Hub) waitingNotice() time.Duration {
	if h.opts.WaitingNotice > 0 {
		return h.opts.WaitingNotice
	}
	return h.Team.WaitingNotice
}

// waitingSpell is a pane's current wait for a person.
type waitingSpell struct {
	since time.Time
	told  bool
}

// watchWaiting looks at the panes every so often until ctx ends and tells
// the human about each spell longer than after.
func (h *Hub) watchWaiting(ctx context.Context, after time.Duration) {
	every := min(max(after/5, 10*time.Millisecond), 5*time.Second)
	spells := map[string]*waitingSpell{}
	periodic.Run(ctx, every, func() { h.checkWaiting(ctx, spells, after, time.Now()) })
}

// checkWaiting updates spells from the panes' states at now and sends the
// line for each spell over after that was not told yet.
func (h *Hub) checkWaiting(ctx context.Context, spells map[string]*waitingSpell, after time.Duration, now time.Time) {
	waiting := map[string]agent.Status{}
	for _, st := range h.panes.statuses() {
		if st.State == agent.StateWaitingForHuman {
			waiting[st.Role] = st
		}
	}
	for role := range spells {
		if _, ok := waiting[role]; !ok {
			delete(spells, role) // the spell ended
		}
	}
	for role, st := range waiting {
		sp := spells[role]
		if sp == nil {
			sp = &waitingSpell{since: now}
			spells[role] = sp
			h.log.Info("pane waits for a person", "role", role, "screen", st.Readiness)
		}
		if sp.told || now.Sub(sp.since) < after {
			continue
		}
		sp.told = true // one line per spell, sent or not
		h.tellWaiting(ctx, st, now.Sub(sp.since), sp.since)
	}
}

// tellWaiting sends the human the line about st's pane, waiting for a
// person for d since since.
func (h *Hub) tellWaiting(ctx context.Context, st agent.Status, d time.Duration, since time.Time) {
	text := waitingLine(st, d)
	if h.relay == nil {
		h.log.Warn("pane waits for a person; no Telegram to tell", "role", st.Role, "line", text)
		return
	}
	_, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: roles.RoleTelegram, Content: text,
		Channel: broker.ChannelSystem, MessageID: msgid.Waiting(st.Role, since), HubID: true, SessionScoped: true})
	if err != nil && !errors.Is(err, proto.ErrNoRoute) {
		h.log.Warn("tell the human a pane waits", "role", st.Role, "line", text, "err", err)
	}
}

// waitingLine is the Telegram line: who waits, how long, on what, and how
// many messages are held for it.
func waitingLine(st agent.Status, d time.Duration) string {
	on := st.Readiness // "blocked: <dialog marker>"
	if !strings.HasPrefix(on, "blocked") {
		on = "its CLI asked for a permission"
	}
	line := fmt.Sprintf("hm: %s (%s) has waited for you for %s: %s.", st.Role, st.Header, d.Round(time.Second), on)
	if st.Queued > 0 {
		line += fmt.Sprintf(" %d message(s) held.", st.Queued)
	}
	return line + " hm attach " + st.Role
}
