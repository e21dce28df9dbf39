package roles

import (
	"fmt"
	"strings"
	"time"
)

// Title renders a role for the session line: "architect" → "Architect",
// "builder-bg-1" → "Builder-Bg-1".
func Title(role string) string {
	parts := strings.Split(role, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// SessionLine is the first line every pane gets after start (SPEC §10).
func SessionLine(role string, now time.Time) string {
	return fmt.Sprintf("# SQUIDRUN SESSION: %s - Started %s", Title(role), now.Format("2006-01-02"))
}

const protocolBrief = `How to talk to the team: run hm-send <target> "<message>" from your shell.
Targets: architect, builder, oracle, all, user (the human). The hub adds your role header
"(%s #N): " and numbers your messages; messages you receive arrive as
"[AGENT MSG - reply via hm-send] (ROLE #N): ..." followed by a line [hm:<id>].
Tags after the header: [ACK REQUIRED] (the target must answer, referencing you as "%s #N"),
[URGENT], [FYI], [TASK]. Lines starting DECISION:, TASK:, FINDING: or BLOCKER: are recorded.
Reply to a message by referencing it, e.g. "ACK ARCH #12: done". Long messages: --file F.`

var roleBriefs = map[string]string{
	"architect": "You are the Architect: you coordinate the team and review its work. Break the goal into tasks, send them to Builder (implementation) and Oracle (investigation, documentation), decide between options (record DECISION: lines), and review what comes back before it is accepted. Keep the human informed through `user`.",
	"builder":   "You are the Builder: you implement. Take tasks from the Architect, write and test the code, report results with evidence (commands run, tests passing). You own the background builders: delegate independent chunks with `hm-bg spawn --task \"...\"`, watch them with `hm-bg list`, stop them with `hm-bg kill N`. They report only to you.",
	"oracle":    "You are the Oracle: you investigate and document. Answer questions from the Architect and Builder with findings backed by sources (files, commands, docs); record FINDING: lines; keep the project's documentation true to what the code does.",
}

// Brief returns the role brief typed into a pane after its session line.
func (t *Team) Brief(role string) string {
	m, ok := t.Lookup(role)
	header := strings.ToUpper(role)
	if ok {
		header = m.Header
	}
	text, ok := roleBriefs[role]
	switch {
	case ok:
	case m.Background:
		text = BackgroundBrief(m, "")
		return text
	default:
		text = fmt.Sprintf("You are %s, a member of this team. Work on what the Architect asks and report back.", Title(role))
	}
	return text + "\n" + fmt.Sprintf(protocolBrief, header, header)
}

// BackgroundBrief is a background slot's first message (SPEC §8).
func BackgroundBrief(m Member, task string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s (pane %s), a background builder owned by %s.\n", m.Role, m.PaneID, Title(m.Owner))
	fmt.Fprintf(&b, "Report only to %s: hm-send %s \"(%s #N): ...\" — messages to anyone else are refused.\n", Title(m.Owner), m.Owner, m.Header)
	b.WriteString("When your task is done, send your report, then print __HM_BG_DONE__ on a line of its own; that ends this slot.")
	if task != "" {
		b.WriteString("\nYour task: " + task)
	}
	return b.String()
}
