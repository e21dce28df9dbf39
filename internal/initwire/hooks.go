package initwire

import (
	"fmt"
	"slices"
	"strings"
)

// events are the hook events hm wires for each CLI, spelled as the CLI
// spells them; `hm hook <cli> <event>` handles each.
var events = map[string][]string{
	// Claude Code: context at start (and after /clear, /compact), receipt
	// and delivery on each prompt and between tool calls, and a last look
	// before the turn ends.
	// Notification says when it asks its person for a permission
	// (the pane's state, waiting_for_human).
	"claude": {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "Notification"},
	// Codex: the same four events, with Claude's payloads (.codex/hooks.json).
	"codex": {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"},
	// Gemini CLI: its names for the same moments, and its Notification
	// (a tool permission asked of the person).
	"gemini": {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "Notification"},
}

// toolEvents fire per tool call; Claude Code and Gemini CLI document "*"
// as the matcher for every tool (Codex matches every tool without one).
var toolEvents = map[string]bool{"PostToolUse": true, "AfterTool": true}

// Claude Code's asyncRewake Stop hook: it runs in the background once the
// agent stops and waits for the next message (`hm hook claude Stop
// --wait`), which wakes the idle session. Claude Code ends a hook at its
// timeout (seconds); the hook gives up a little before, with exit 0.
const (
	rewakeWait    = "55m"
	rewakeTimeout = 3600
)

// Hook is one hook hm wires.
type Hook struct {
	Event   string // the CLI's name for the event
	Matcher string // "*" for tool events, where the CLI takes one
	Name    string // Gemini's name for the hook (what /hooks enable|disable takes)
	Command string // the `hm hook …` command line
	// AsyncRewake runs the hook in the background; its exit 2 wakes the
	// session with its stderr (Claude Code). Timeout is in seconds.
	AsyncRewake bool
	Timeout     int
}

// String names the hook in hm init's notes: its event, and "(asyncRewake)"
// for the waiting one.
func (h Hook) String() string {
	if h.AsyncRewake {
		return h.Event + " (asyncRewake)"
	}
	return h.Event
}

// Hooks returns the hooks hm wires for agent (a CLI of Agents), the
// same in hm init and in the launch flags of panes hm starts itself.
func Hooks(agent string) []Hook {
	var specs []Hook
	for _, ev := range events[agent] {
		s := Hook{Event: ev, Command: fmt.Sprintf("hm hook %s %s", agent, ev)}
		if toolEvents[ev] && agent != "codex" {
			s.Matcher = "*"
		}
		if agent == "gemini" {
			s.Name = "hm-" + ev
		}
		specs = append(specs, s)
		if agent == "claude" && ev == "Stop" {
			specs = append(specs, Hook{Event: ev, Command: "hm hook claude Stop --wait " + rewakeWait, AsyncRewake: true, Timeout: rewakeTimeout})
		}
	}
	return specs
}

// Runs reports whether cmd runs h's hm command: hm (by any path) hook, the
// CLI and the event, with or without further flags, except that the
// waiting hook (--wait) and the plain one are told apart.
func (h Hook) Runs(cmd string) bool {
	want := strings.Fields(h.Command)
	if !isHMCommand(cmd, want[1:4]...) {
		return false
	}
	return hasWait(strings.Fields(cmd)) == hasWait(want)
}

func hasWait(fields []string) bool {
	return slices.ContainsFunc(fields, func(f string) bool {
		return f == "--wait" || f == "-wait" || strings.HasPrefix(f, "--wait=") || strings.HasPrefix(f, "-wait=")
	})
}

// group is the hook group hm adds for h.
func (h Hook) group() obj {
	var g, hd obj
	if h.Matcher != "" {
		g = append(g, field{"matcher", h.Matcher})
	}
	if h.Name != "" {
		hd = append(hd, field{"name", h.Name})
	}
	hd = append(hd, field{"type", "command"}, field{"command", h.Command})
	if h.AsyncRewake {
		hd = append(hd, field{"asyncRewake", true}, field{"timeout", h.Timeout})
	}
	return append(g, field{"hooks", []any{hd}})
}
