// Package hook is what `hm hook <cli> <event>` knows of the agent CLIs'
// hooks (Claude Code, Codex CLI, Gemini CLI): which events hm acts on, what
// it reads of their JSON input, and the JSON each CLI expects back, within
// the 10,000-character cap on what a hook may add to the agent's context
// (docs/protocol.md §14). It does no I/O.
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kind is what hm does for a hook event.
type Kind int

// Hook event kinds.
const (
	// SessionStart: the agent starts (or resumes, or lost its context to a
	// compaction): its place in the session and the session handoff. The
	// messages waiting for it are typed (a session start begins no turn).
	SessionStart Kind = iota + 1
	// Prompt: a prompt is submitted (UserPromptSubmit, BeforeAgent): its
	// [hm:<id>] markers are receipts; waiting messages join the turn.
	Prompt
	// Tool: a tool call ended mid-turn (PostToolUse, AfterTool): waiting
	// messages join the turn.
	Tool
	// Stop: the agent is about to stop (Stop, AfterAgent): waiting messages
	// keep it going, unless a stop hook already did (stop_hook_active).
	Stop
	// Notification: the agent tells its person something (Notification):
	// it asks for a permission, or it sits idle at its prompt. hm takes
	// nothing then; the event tells the pane's state (Event.State).
	Notification
	// Wake: Claude Code's asyncRewake Stop hook (`hm hook claude Stop
	// --wait`), run in the background when the agent stops: it waits for
	// the next message queued for the pane and wakes the idle session
	// with it (exit 2, the message on stderr).
	Wake
)

// CLIs lists the CLIs whose hooks hm speaks.
var CLIs = []string{"claude", "codex", "gemini"}

// events maps each CLI's event names to kinds. Codex's hooks mirror Claude
// Code's names and shapes; Gemini CLI names them after its agent loop.
var events = map[string]map[string]Kind{
	"claude": {"SessionStart": SessionStart, "UserPromptSubmit": Prompt, "PostToolUse": Tool, "Stop": Stop, "Notification": Notification},
	"codex":  {"SessionStart": SessionStart, "UserPromptSubmit": Prompt, "PostToolUse": Tool, "Stop": Stop},
	"gemini": {"SessionStart": SessionStart, "BeforeAgent": Prompt, "AfterTool": Tool, "AfterAgent": Stop, "Notification": Notification},
}

// Event is one CLI's hook event.
type Event struct {
	CLI  string // "claude", "codex" or "gemini"
	Name string // the CLI's name for it, e.g. "UserPromptSubmit"
	Kind Kind
}

// String is how the ledger names the hook: "claude UserPromptSubmit",
// "claude Stop --wait".
func (e Event) String() string {
	if e.Kind == Wake {
		return e.CLI + " " + e.Name + " --wait"
	}
	return e.CLI + " " + e.Name
}

// Waiting is e run as an asyncRewake hook (Wake). Only Claude Code's Stop
// has one: its background hooks that exit 2 wake the session with their
// stderr; Codex and Gemini have no such hook.
func (e Event) Waiting() (Event, error) {
	if e.CLI != "claude" || e.Kind != Stop {
		return Event{}, fmt.Errorf("--wait is for Claude Code's Stop hook (asyncRewake), not %s", e)
	}
	e.Kind = Wake
	return e, nil
}

// MidTurn reports whether what e prints joins the turn under way (a tool
// call's or the stop's hook, the waiting Stop hook that wakes the session
// the stop left) rather than a new prompt or session. Its claim takes
// nothing while an interrupt hm sent is in flight (proto.ClaimRequest.MidTurn).
func (e Event) MidTurn() bool {
	return e.Kind == Tool || e.Kind == Stop || e.Kind == Wake
}

// Lookup finds cli's event name (both case-insensitive).
func Lookup(cli, name string) (Event, error) {
	cli = strings.ToLower(cli)
	names, ok := events[cli]
	if !ok {
		return Event{}, fmt.Errorf("unknown CLI %q (want %s)", cli, strings.Join(CLIs, ", "))
	}
	for n, k := range names {
		if strings.EqualFold(n, name) {
			return Event{CLI: cli, Name: n, Kind: k}, nil
		}
	}
	return Event{}, fmt.Errorf("%s has no hook event %q that hm acts on (want %s)", cli, name, strings.Join(Names(cli), ", "))
}

// Names returns cli's event names hm acts on, in the order of their kinds.
func Names(cli string) []string {
	var out []string
	for n := range events[cli] {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int { return int(events[cli][a]) - int(events[cli][b]) })
	return out
}

// Input is what hm reads of a hook's JSON input; other fields are ignored.
type Input struct {
	// Prompt is the submitted prompt (UserPromptSubmit, BeforeAgent).
	Prompt string `json:"prompt"`
	// Source is why a session starts: startup, resume, clear, or compact
	// (Claude Code and Codex, after a compaction).
	Source string `json:"source"`
	// StopHookActive: the agent already goes on because of a stop hook.
	StopHookActive bool `json:"stop_hook_active"`
	// SessionID is the CLI's own session (every hook's input carries it:
	// Claude Code's, Codex CLI's and Gemini CLI's session_id): hm resumes
	// it when the program dies (agent.Pane.ReportSession).
	SessionID string `json:"session_id"`
	// Message and NotificationType are a Notification's: Claude Code's
	// types are permission_prompt, idle_prompt, auth_success and
	// elicitation_dialog; Gemini CLI's is ToolPermission.
	Message          string `json:"message"`
	NotificationType string `json:"notification_type"`
}

// Pane states a hook event tells (agent.State), sent with its claim.
const (
	StateReady           = "ready"
	StateBusy            = "busy"
	StateWaitingForHuman = "waiting_for_human"
)

// State is the pane state event e with input in tells, or "" when it
// tells none (docs/protocol.md § "Liveness"): a prompt or a tool call is
// busy, a Stop is ready (a stop hm blocks goes on: the screen turns busy),
// a Notification that asks for a permission or a choice waits for a
// person. Claude Code's idle_prompt ("Claude is waiting for your input")
// is ready, not waiting for a person: an idle agent at its prompt is what
// hm types messages into, and holding them would leave it idle for good.
func (e Event) State(in Input) string {
	switch e.Kind {
	case Prompt, Tool:
		return StateBusy
	case Stop:
		return StateReady
	case Wake:
		return "" // the Stop hook that runs beside it tells it
	case Notification:
	default:
		return ""
	}
	if e.CLI == "gemini" {
		return StateWaitingForHuman // its only Notification: ToolPermission
	}
	switch strings.ToLower(in.NotificationType) {
	case "permission_prompt", "elicitation_dialog":
		return StateWaitingForHuman
	case "idle_prompt":
		return StateReady
	case "":
		// Older CLIs send the message alone.
		switch m := strings.ToLower(in.Message); {
		case strings.Contains(m, "permission"):
			return StateWaitingForHuman
		case strings.Contains(m, "waiting for your input"):
			return StateReady
		}
	}
	return ""
}

// ParseInput reads a hook's input, a JSON object. Any other JSON value is
// refused: null would decode as an empty object, and an array, string or
// number is not a CLI's hook input either.
func ParseInput(data []byte) (Input, error) {
	var in Input
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Input{}, errors.New("hook input: not a JSON object")
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return Input{}, fmt.Errorf("hook input: %w", err)
	}
	return in, nil
}

// receiptMarker is the trailer every typed message ends with (agent.Trailer).
var receiptMarker = regexp.MustCompile(`\[hm:([A-Za-z0-9_.:-]{1,128})\]`)

// ReceiptIDs returns the message ids of the [hm:<id>] markers in text, each
// once, in order of appearance: the messages a submitted prompt proves the
// agent received.
func ReceiptIDs(text []byte) []string {
	var ids []string
	for _, m := range receiptMarker.FindAllSubmatch(text, -1) {
		if id := string(m[1]); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Receipts returns the ids a prompt event's input proves received: the
// markers in its prompt.
func (in Input) Receipts() []string { return ReceiptIDs([]byte(in.Prompt)) }

// PromptReceipts returns the ids what `hm receipt` reads proves received:
// a CLI hook's JSON input counts by its prompt alone (any other field, a
// stop's last answer for one, may hold hm's own output), plain text whole.
func PromptReceipts(data []byte) []string {
	if in, err := ParseInput(data); err == nil {
		return in.Receipts()
	}
	return ReceiptIDs(data)
}

// Carries reports whether e's answer brings text to the agent as it is.
// Codex CLI HTML-escapes a Stop hook's reason (&gt;, &amp;) and wraps it
// in a <hook_prompt> element, so a text holding <, > or & would arrive
// altered: such a message is not delivered through Codex's Stop hook and
// is typed instead (docs/protocol.md §14).
func (e Event) Carries(text string) bool {
	return e.CLI != "codex" || e.Kind != Stop || !strings.ContainsAny(text, "<>&")
}

// Output is e's JSON answer carrying text into the agent: additional
// context for most events, a blocked stop whose reason is text for Stop.
// Empty text has no answer (nil): the hook prints nothing. Wake answers
// with the text itself, for stderr (and exit 2).
func Output(e Event, text string) []byte {
	if text == "" {
		return nil
	}
	if e.Kind == Wake {
		return []byte(text + "\n")
	}
	var v any
	switch {
	case e.Kind == Stop && e.CLI == "gemini":
		// AfterAgent: "deny" rejects the response and sends the reason
		// to the agent as its next prompt.
		v = struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"deny", text}
	case e.Kind == Stop:
		v = struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"block", text}
	default:
		type specific struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		}
		v = struct {
			HookSpecificOutput specific `json:"hookSpecificOutput"`
		}{specific{e.Name, text}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // plain strings: cannot fail
	return b.Bytes()
}
