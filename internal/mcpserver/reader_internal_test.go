package mcpserver

import (
	"testing"

	"hm/broker/proto"
	"hm/internal/ground/status"
)

// TestRecipientIsTheHubsRule: what hm mcp counts as the role's own
// messages (hm_ack as the operator, the channel's pushes) is the hub's
// rule (journal.Reader.Received) over the team the status answer lists:
// a main pane receives broadcasts and others-<another>, a background slot
// and the user only rows to them, and no one a row the hub only recorded
// (a refused Telegram update, whichever role it names).
func TestRecipientIsTheHubsRule(t *testing.T) {
	t.Parallel()
	panes := []proto.PaneView{{Role: "architect"}, {Role: "builder"}, {Role: "oracle"}, {Role: "builder-bg-1", Background: true}}
	rows := []struct {
		name string
		m    proto.MessageView
		to   map[string]bool
	}{
		{"to builder", proto.MessageView{From: "architect", To: "builder", Status: status.Routed}, map[string]bool{"builder": true}},
		{"broadcast", proto.MessageView{From: "architect", To: "all", Status: status.Routed}, map[string]bool{"builder": true, "oracle": true}},
		{"others-oracle", proto.MessageView{From: "architect", To: "others-oracle", Status: status.Routed}, map[string]bool{"builder": true}},
		{"to a slot", proto.MessageView{From: "builder", To: "builder-bg-1", Status: status.Brokered}, map[string]bool{"builder-bg-1": true}},
		{"to user", proto.MessageView{From: "oracle", To: "user", Status: status.Routed}, map[string]bool{"user": true}},
		{"refused telegram (older: to architect)", proto.MessageView{From: "user", To: "architect", Status: status.Recorded}, nil},
		{"refused telegram (to user)", proto.MessageView{From: "user", To: "user", Status: status.Recorded}, nil},
	}
	for _, r := range rows {
		for _, role := range []string{"architect", "builder", "oracle", "builder-bg-1", "user"} {
			me := self{role: role, reader: readerOf(proto.StatusResult{Role: role, Panes: panes})}
			if got := me.recipient(r.m); got != r.to[role] {
				t.Errorf("%s, as %s: recipient = %v, want %v", r.name, role, got, r.to[role])
			}
		}
	}
}
