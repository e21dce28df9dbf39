package cli

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"hm/internal/ground/status"
	"hm/internal/hub"
	"hm/journal"
)

// TestHubTerminal: hm up's terminal shows a one-line status (panes, queue,
// stuck, the last message in plain words, warnings) and each warning as one
// short line, not the raw log (issue #34 item 10). Golden:
// testdata/upterm/terminal.golden (-update rewrites it).
func TestHubTerminal(t *testing.T) {
	t.Parallel()
	pane := func(role, state string, queued int) hub.PaneStatus {
		return hub.PaneStatus{Role: role, State: state, Queued: queued}
	}
	last := &journal.Message{SenderRole: "builder", TargetRole: "architect", Header: "BUILDER", Seq: 1,
		Status: status.Routed, AckStatus: status.Submitted}
	tests := []struct {
		name     string
		st       hub.Status
		last     *journal.Message
		warnings int
	}{
		{"no panes", hub.Status{}, nil, 0},
		{"three ready", hub.Status{Panes: []hub.PaneStatus{pane("architect", "ready", 0), pane("builder", "ready", 0), pane("oracle", "ready", 0)}}, nil, 0},
		{"busy, queued, last message", hub.Status{Panes: []hub.PaneStatus{pane("architect", "busy", 2), pane("builder", "ready", 1)}}, last, 0},
		{"stuck and warnings", hub.Status{Panes: []hub.PaneStatus{pane("architect", "ready", 0)}, Stuck: []hub.StuckStatus{{}}}, last, 3},
	}
	var b strings.Builder
	for _, tt := range tests {
		b.WriteString(tt.name + ": " + hub.TerminalLine(tt.st, tt.last, tt.warnings) + "\n")
	}
	term := &terminalLog{w: &b}
	log := slog.New(term)
	log.Info("pane started", "role", "architect")
	log.Warn("telegram relay off", "err", errors.New("no bot token"))
	log.With("role", "oracle").Error("pane ended", "error", "exit status 1")
	_ = term.counting().Handle(context.Background(), slog.Record{Level: slog.LevelWarn, Message: "counted, not shown"})
	b.WriteString("warnings counted: " + strconv.Itoa(term.count()) + "\n")
	checkGolden(t, "testdata/upterm/terminal.golden", b.String())
}
