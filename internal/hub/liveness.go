package hub

import (
	"context"
	"errors"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/periodic"
	"hm/internal/notify"
	"hm/roles"
)

// A pane that waits for a person (agent.StateWaitingForHuman: a dialog on
// its screen, or its CLI's Notification hook asked for a permission) for
// longer than the team's WaitingNotice is told to the person once per
// waiting spell (notify.Waiting says what a spell is): on the desktop, in
// the hub's terminal, in the cockpit, and as one Telegram line where the
// relay runs. The line is a system message to telegram, so the ledger (and
// the handoff built from it) records it too (docs/protocol.md
// § "Liveness", "Notifications").

// waitingNotice is how long a pane waits for a person before the line; 0
// is off.
func (h *Hub) waitingNotice() time.Duration {
	if h.opts.WaitingNotice > 0 {
		return h.opts.WaitingNotice
	}
	return h.Team().WaitingNotice
}

// spellsKey keeps the waiting spells from one hub to the next.
const spellsKey = "notify/waiting-spells"

// watchWaiting looks at the panes until ctx ends and posts each spell
// longer than after; the open spells are kept for the next hub when it
// returns. It looks at start, when a pane changes (its output, a hook's
// report: activity.changed), at most every after/5 (5 s at most), and on
// that clock only while a spell needs it (notify.Waiting.Due): with no
// pane waiting for a person it sleeps (#36).
func (h *Hub) watchWaiting(ctx context.Context, after time.Duration) {
	w := &notify.Waiting{After: after, Settle: h.opts.WaitingSettle}
	if saved, ok, err := h.Ledger.KVGet(ctx, spellsKey); err != nil {
		h.log.Warn("read the last hub's waiting spells", "err", err)
	} else if ok {
		if err := w.Load(saved); err != nil {
			h.log.Warn("read the last hub's waiting spells", "err", err)
		}
	}
	every := min(max(after/5, 10*time.Millisecond), 5*time.Second)
	changed, unlisten := h.act.changed.Listen()
	defer unlisten()
	changed.Kick()
	periodic.Armed(ctx, changed, every, func() time.Duration {
		h.act.looks.waiting.Add(1)
		for _, ev := range w.Observe(time.Now(), h.paneStates()) {
			h.notifier.Post(ev)
		}
		if w.Due() {
			return every
		}
		return 0
	})
	saveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Ledger.KVSet(saveCtx, spellsKey, w.Save()); err != nil {
		h.log.Warn("keep the waiting spells for the next hub", "err", err)
	}
}

// paneStates is what notify.Waiting needs of the hosted panes.
func (h *Hub) paneStates() []notify.PaneState {
	sts := h.panes.statuses()
	out := make([]notify.PaneState, 0, len(sts))
	for _, st := range sts {
		out = append(out, notify.PaneState{Role: st.Role, Header: st.Header, PID: st.PID,
			Waiting: st.State == agent.StateWaitingForHuman, Screen: st.Readiness, Queued: st.Queued})
	}
	return out
}

// tellWaiting sends the Telegram line of a waiting pane's event.
func (h *Hub) tellWaiting(ctx context.Context, ev notify.Event) error {
	_, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: roles.RoleTelegram, Content: ev.Line,
		Channel: broker.ChannelSystem, MessageID: msgid.Waiting(ev.Role, time.UnixMilli(ev.AtMs)), HubID: true, SessionScoped: true})
	if err != nil && !errors.Is(err, proto.ErrNoRoute) {
		return err
	}
	return nil
}
