package hub

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"hm/agent"
	"hm/internal/ground/periodic"
	"hm/journal"
)

// TerminalLine is the hub's terminal in one line (hm up without -v, issue
// #34 item 10): the panes by state, the messages queued at them, the
// session's last message in plain words, and the warnings logged so far
// (the full log is in .squidrun/runtime/hub.log; hm up -v streams it).
func TerminalLine(st Status, last *journal.Message, warnings int) string {
	states := map[string]int{}
	queued := 0
	for _, p := range st.Panes {
		states[p.State]++
		queued += p.Queued
	}
	names := make([]string, 0, len(states))
	for s := range states {
		names = append(names, s)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, s := range names {
		parts = append(parts, fmt.Sprintf("%d %s", states[s], s))
	}
	panes := "no panes"
	if len(parts) > 0 {
		panes = "panes " + strings.Join(parts, ", ")
	}
	line := fmt.Sprintf("%s · queued %d", panes, queued)
	if n := len(st.Stuck); n > 0 {
		line += fmt.Sprintf(" · stuck %d", n)
	}
	if last != nil {
		ref := last.Ref()
		if ref == "" {
			ref = last.SenderRole
		}
		line += fmt.Sprintf(" · last: %s %s → %s, %s", ref, last.SenderRole, last.TargetRole, last.Delivery())
	}
	switch warnings {
	case 0:
	case 1:
		line += " · 1 warning (hub.log)"
	default:
		line += fmt.Sprintf(" · %d warnings (hub.log)", warnings)
	}
	return line
}

// WatchTerminal writes TerminalLine to w whenever it changes, until ctx
// ends. warnings reports the warnings logged so far. It looks at start,
// when something the line shows may have changed (a commit, a pane's
// output or hook report, a warning: activity.changed), at most every
// interval, and on that clock only while a pane may change state with
// time alone (starting or busy) or has messages queued: an idle hub
// runs no timer for it (#36).
func (h *Hub) WatchTerminal(ctx context.Context, w io.Writer, interval time.Duration, warnings func() int) {
	shown := ""
	look := func() time.Duration {
		h.act.looks.terminal.Add(1)
		var last *journal.Message
		if rows, err := h.Ledger.History(ctx, journal.HistoryQuery{Last: 1, SessionID: h.SessionID()}); err == nil && len(rows) > 0 {
			last = &rows[0]
		}
		st := h.Snapshot(ctx)
		if line := TerminalLine(st, last, warnings()); line != shown {
			shown = line
			fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), line)
		}
		if unsettled(st) {
			return interval
		}
		return 0
	}
	changed, unlisten := h.act.changed.Listen()
	defer unlisten()
	if look() > 0 {
		changed.Kick()
	}
	periodic.Armed(ctx, changed, interval, look)
}

// unsettled: a pane of st may change state with time alone (a quiet
// period that ends, a turn that times out) or has messages queued.
func unsettled(st Status) bool {
	for _, p := range st.Panes {
		if p.Queued > 0 || p.State == string(agent.StateStarting) || p.State == string(agent.StateBusy) {
			return true
		}
	}
	return false
}
