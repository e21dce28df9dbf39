package hub

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

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

// WatchTerminal writes TerminalLine to w whenever it changes, checked
// every interval, until ctx ends. warnings reports the warnings logged so
// far.
func (h *Hub) WatchTerminal(ctx context.Context, w io.Writer, interval time.Duration, warnings func() int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	shown := ""
	for {
		var last *journal.Message
		if rows, err := h.Ledger.History(ctx, journal.HistoryQuery{Last: 1, SessionID: h.SessionID()}); err == nil && len(rows) > 0 {
			last = &rows[0]
		}
		if line := TerminalLine(h.Snapshot(ctx), last, warnings()); line != shown {
			shown = line
			fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), line)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
