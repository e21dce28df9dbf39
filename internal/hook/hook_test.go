package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"hm/broker/proto"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cli, name string
		want      Event
		err       string
	}{
		{cli: "claude", name: "UserPromptSubmit", want: Event{"claude", "UserPromptSubmit", Prompt}},
		{cli: "Codex", name: "stop", want: Event{"codex", "Stop", Stop}},
		{cli: "gemini", name: "aftertool", want: Event{"gemini", "AfterTool", Tool}},
		{cli: "gemini", name: "AfterAgent", want: Event{"gemini", "AfterAgent", Stop}},
		{cli: "gemini", name: "SessionStart", want: Event{"gemini", "SessionStart", SessionStart}},
		{cli: "gemini", name: "UserPromptSubmit", err: "gemini has no hook event \"UserPromptSubmit\" that hm acts on (want SessionStart, BeforeAgent, AfterTool, AfterAgent, Notification)"},
		{cli: "claude", name: "notification", want: Event{"claude", "Notification", Notification}},
		{cli: "codex", name: "Notification", err: "codex has no hook event \"Notification\" that hm acts on (want SessionStart, UserPromptSubmit, PostToolUse, Stop)"},
		{cli: "aider", name: "Stop", err: `unknown CLI "aider" (want claude, codex, gemini)`},
	}
	for _, tt := range tests {
		got, err := Lookup(tt.cli, tt.name)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Lookup(%s, %s) error %v, want %q", tt.cli, tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Lookup(%s, %s) = %+v, %v; want %+v", tt.cli, tt.name, got, err, tt.want)
		}
	}
}

// TestEventState: the pane state each hook event tells (docs/protocol.md
// § "Liveness").
func TestEventState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cli, name, input, want string
	}{
		{"claude", "UserPromptSubmit", `{"prompt":"go"}`, StateBusy},
		{"gemini", "BeforeAgent", `{"prompt":"go"}`, StateBusy},
		{"claude", "PostToolUse", `{}`, StateBusy},
		{"gemini", "AfterTool", `{}`, StateBusy},
		{"claude", "Stop", `{}`, StateReady},
		{"codex", "Stop", `{}`, StateReady},
		{"gemini", "AfterAgent", `{}`, StateReady},
		{"claude", "SessionStart", `{"source":"startup"}`, ""},
		{"claude", "Notification", `{"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`, StateWaitingForHuman},
		{"claude", "Notification", `{"message":"Claude Code needs your attention","notification_type":"elicitation_dialog"}`, StateWaitingForHuman},
		{"claude", "Notification", `{"message":"Claude is waiting for your input","notification_type":"idle_prompt"}`, StateReady},
		{"claude", "Notification", `{"message":"Signed in","notification_type":"auth_success"}`, ""},
		{"claude", "Notification", `{"message":"Claude needs your permission to use Write"}`, StateWaitingForHuman},
		{"claude", "Notification", `{"message":"Claude is waiting for your input"}`, StateReady},
		{"claude", "Notification", `{"message":"something else"}`, ""},
		{"gemini", "Notification", `{"notification_type":"ToolPermission","message":"Tool run_shell_command requires confirmation"}`, StateWaitingForHuman},
	}
	for _, tt := range tests {
		ev, err := Lookup(tt.cli, tt.name)
		if err != nil {
			t.Fatal(err)
		}
		in, err := ParseInput([]byte(tt.input))
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.State(in); got != tt.want {
			t.Errorf("%s %s %s: state %q, want %q", tt.cli, tt.name, tt.input, got, tt.want)
		}
	}
}

func TestReceipts(t *testing.T) {
	t.Parallel()
	in, err := ParseInput([]byte(`{"prompt":"[AGENT MSG - reply via hm-send] (ARCH #1): x [hm:a-1] then [hm:b.2:x] [hm:a-1] [hm:] [hm:bad id]","stop_hook_active":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Receipts(); !slices.Equal(got, []string{"a-1", "b.2:x"}) || !in.StopHookActive {
		t.Errorf("receipts %v, stop_hook_active %v", got, in.StopHookActive)
	}
	if _, err := ParseInput([]byte("plain text")); err == nil {
		t.Error("plain text parsed as a hook's input")
	}
}

// TestParseInput: a hook's input is a JSON object; anything else (null,
// an array, a string, a number, text) is refused, so `hm hook` prints
// nothing and neither registers nor claims (docs/protocol.md §14).
func TestParseInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		ok          bool
	}{
		{"an object", `{"prompt":"go"}`, true},
		{"the empty object", `{}`, true},
		{"an object in whitespace", " \n\t{\"stop_hook_active\":true} \r\n", true},
		{"null", `null`, false},
		{"null in whitespace", " null \n", false},
		{"an array", `[{"prompt":"go"}]`, false},
		{"a string", `"{}"`, false},
		{"a number", `42`, false},
		{"true", `true`, false},
		{"empty", ``, false},
		{"whitespace", " \n", false},
		{"text", `plain text`, false},
		{"an object and more", `{} {}`, false},
	}
	for _, tt := range tests {
		in, err := ParseInput([]byte(tt.input))
		if (err == nil) != tt.ok {
			t.Errorf("%s: ParseInput(%q) = %+v, %v; want ok %v", tt.name, tt.input, in, err, tt.ok)
		}
	}
}

// FuzzParseInput: whatever ParseInput accepts is a JSON object: it starts
// with '{' once surrounding whitespace is trimmed.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{`{}`, `{"prompt":"x"}`, `null`, ` null `, `[]`, `"s"`, `1`, ``, `{"a":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseInput(data); err == nil && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			t.Errorf("accepted %q, which is not a JSON object", data)
		}
	})
}

func TestOutput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		e    Event
		want string
	}{
		{Event{"claude", "PostToolUse", Tool}, `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"a <b> & c"}}`},
		{Event{"codex", "Stop", Stop}, `{"decision":"block","reason":"a <b> & c"}`},
		{Event{"gemini", "AfterAgent", Stop}, `{"decision":"deny","reason":"a <b> & c"}`},
		{Event{"gemini", "BeforeAgent", Prompt}, `{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"a <b> & c"}}`},
	} {
		if got := string(Output(tt.e, "a <b> & c")); got != tt.want+"\n" {
			t.Errorf("%v: %s, want %s", tt.e, got, tt.want)
		}
		if got := Output(tt.e, ""); got != nil {
			t.Errorf("%v with nothing to say printed %q", tt.e, got)
		}
	}
}

func TestLenAndPreview(t *testing.T) {
	t.Parallel()
	if n := Len("aé😀"); n != 4 {
		t.Errorf("Len = %d, want 4 (an astral character counts two)", n)
	}
	if got := preview("ab😀cd", 3); got != "ab" {
		t.Errorf("preview cut inside a surrogate pair: %q", got)
	}
	if got := preview("line one\nline two\nline three", 22); got != "line one\nline two\n" {
		t.Errorf("preview %q, want it cut at the end of a line", got)
	}
	if got := preview("short", 10); got != "short" {
		t.Errorf("preview %q", got)
	}
}

// TestComposeBudget: whatever the messages and the handoff, the context
// stays within MaxContext; messages are taken in order and stop at the
// first that does not fit; the session's first message stands for the
// session context.
func TestComposeBudget(t *testing.T) {
	t.Parallel()
	msg := func(id string, n int) proto.ClaimedMessage {
		return proto.ClaimedMessage{MessageID: id, Text: "[AGENT MSG - reply via hm-send] " + strings.Repeat("é", n) + " [hm:" + id + "]"}
	}
	plain := func(id, body string) proto.ClaimedMessage {
		return proto.ClaimedMessage{MessageID: id, Text: "[AGENT MSG - reply via hm-send] (ARCH #1): " + body + " [hm:" + id + "]"}
	}
	sess := &proto.SessionContext{Role: "builder", Line: "# SQUIDRUN SESSION: Builder - Started 2026-11-24", Brief: strings.Repeat("brief ", 150), StartID: "session-1-builder"}
	start := Event{"claude", "SessionStart", SessionStart}
	tests := []struct {
		name    string
		e       Event
		res     proto.ClaimResult
		doc     Doc
		emitted []string
		has     []string
		hasNot  []string
	}{
		{name: "nothing", e: Event{"claude", "Stop", Stop}},
		{name: "fits", e: Event{"claude", "PostToolUse", Tool}, res: proto.ClaimResult{Role: "builder", Messages: []proto.ClaimedMessage{msg("a", 10), msg("b", 10)}},
			emitted: []string{"a", "b"}, has: []string{"hm: 2 messages for you (builder) arrived while you work:"}},
		{name: "order kept at the cap", e: Event{"claude", "PostToolUse", Tool},
			res:     proto.ClaimResult{Messages: []proto.ClaimedMessage{msg("a", 4000), msg("b", 4000), msg("c", 4000), msg("d", 10)}},
			emitted: []string{"a", "b"}, hasNot: []string{"[hm:d]"}},
		{name: "handoff whole", e: start, res: proto.ClaimResult{Session: sess}, doc: Doc{Path: "/r/session.md", Text: "# Handoff"},
			has: []string{sess.Line, "brief brief", "The session handoff (/r/session.md):\n\n# Handoff"}},
		// A session start begins no turn: a waiting message is typed (it
		// starts one), not carried where the model gets it only when
		// something else prompts it (the real-CLI suite's restart case).
		{name: "handoff too long, a waiting message left for typing", e: start, res: proto.ClaimResult{Session: sess, Messages: []proto.ClaimedMessage{msg("a", 4000)}},
			doc: Doc{Path: "/r/session.md", Text: strings.Repeat("handoff line\n", 2000)}, hasNot: []string{"[hm:a]"},
			has: []string{"The session handoff is /r/session.md (26000 characters): read it. It begins:\n\nhandoff line\n"}},
		{name: "startup message, then a waiting one left for typing", e: start, res: proto.ClaimResult{Session: sess, Messages: []proto.ClaimedMessage{msg("session-1-builder", 50), msg("b", 50)}},
			emitted: []string{"session-1-builder"}, hasNot: []string{"[hm:b]"}},
		{name: "startup message claimed", e: start, res: proto.ClaimResult{Session: sess, Messages: []proto.ClaimedMessage{msg("session-1-builder", 50)}},
			doc: Doc{Path: "/r/session.md", Text: "# Handoff"}, emitted: []string{"session-1-builder"}, hasNot: []string{"brief brief", "# Handoff"}},
		{name: "no session context for a prompt", e: Event{"gemini", "BeforeAgent", Prompt}, res: proto.ClaimResult{Session: sess}, doc: Doc{Path: "p", Text: "# Handoff"}},
		// Codex HTML-escapes a Stop hook's reason: a message holding <, >
		// or & stays queued (typed), and so do those after it.
		{name: "codex stop keeps <>& for typing", e: Event{"codex", "Stop", Stop},
			res:     proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "x"), plain("b", "if a < b"), plain("c", "y")}},
			emitted: []string{"a"}, hasNot: []string{"[hm:b]", "[hm:c]"}},
		{name: "codex stop, & first", e: Event{"codex", "Stop", Stop},
			res: proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "fish & chips")}}},
		{name: "codex stop, > in a header-free body", e: Event{"codex", "Stop", Stop},
			res: proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "a->b")}}},
		{name: "codex context takes <>&", e: Event{"codex", "PostToolUse", Tool},
			res: proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "<b> & c")}}, emitted: []string{"a"}},
		{name: "claude stop takes <>&", e: Event{"claude", "Stop", Stop},
			res: proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "<b> & c")}}, emitted: []string{"a"}},
		{name: "gemini stop takes <>&", e: Event{"gemini", "AfterAgent", Stop},
			res: proto.ClaimResult{Messages: []proto.ClaimedMessage{plain("a", "<b> & c")}}, emitted: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compose(tt.e, tt.res, tt.doc)
			if n := Len(got.Text); n > MaxContext {
				t.Errorf("%d characters, over %d", n, MaxContext)
			}
			if !slices.Equal(got.Emitted, tt.emitted) {
				t.Errorf("emitted %v, want %v", got.Emitted, tt.emitted)
			}
			for _, h := range tt.has {
				if !strings.Contains(got.Text, h) {
					t.Errorf("lacks %q:\n%.500s", h, got.Text)
				}
			}
			for _, h := range tt.hasNot {
				if strings.Contains(got.Text, h) {
					t.Errorf("has %q", h)
				}
			}
			if (got.Text == "") != (len(tt.emitted) == 0 && len(tt.has) == 0) {
				t.Errorf("text %q", got.Text)
			}
			// The JSON a CLI reads carries the text unchanged.
			var o struct {
				Reason string `json:"reason"`
				H      struct {
					C string `json:"additionalContext"`
				} `json:"hookSpecificOutput"`
			}
			if b := Output(tt.e, got.Text); b != nil {
				if err := json.Unmarshal(b, &o); err != nil || o.Reason+o.H.C != got.Text {
					t.Errorf("output %s does not carry the text: %v", b, err)
				}
			}
		})
	}
}

// TestComposeManySmall: fifty short messages all fit, in order.
func TestComposeManySmall(t *testing.T) {
	t.Parallel()
	var res proto.ClaimResult
	for i := range 50 {
		id := fmt.Sprintf("m%02d", i)
		res.Messages = append(res.Messages, proto.ClaimedMessage{MessageID: id, Text: "(ARCH #1): ok [hm:" + id + "]"})
	}
	got := Compose(Event{"codex", "UserPromptSubmit", Prompt}, res, Doc{})
	if len(got.Emitted) != 50 || got.Emitted[49] != "m49" {
		t.Errorf("emitted %d messages", len(got.Emitted))
	}
}

// TestMidTurn: tool and stop hooks (and the waiting Stop hook) put what
// they print into the turn under way; session start and prompt hooks and
// notifications do not.
func TestMidTurn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cli, event string
		want       bool
	}{
		{"claude", "SessionStart", false},
		{"claude", "UserPromptSubmit", false},
		{"gemini", "BeforeAgent", false},
		{"claude", "Notification", false},
		{"claude", "PostToolUse", true},
		{"gemini", "AfterTool", true},
		{"codex", "Stop", true},
		{"gemini", "AfterAgent", true},
	} {
		ev, err := Lookup(tt.cli, tt.event)
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.MidTurn(); got != tt.want {
			t.Errorf("%s MidTurn %v, want %v", ev, got, tt.want)
		}
	}
	w, _ := Event{"claude", "Stop", Stop}.Waiting()
	if !w.MidTurn() {
		t.Error("the waiting Stop hook is not mid-turn")
	}
}

// TestWaiting: only Claude Code's Stop has an asyncRewake form; it names
// itself "--wait" in the ledger, tells no state (the Stop hook beside it
// does), and answers with the plain text for stderr.
func TestWaiting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cli, event string
		ok         bool
	}{
		{"claude", "Stop", true},
		{"claude", "UserPromptSubmit", false},
		{"codex", "Stop", false},
		{"gemini", "AfterAgent", false},
	} {
		ev, err := Lookup(tt.cli, tt.event)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ev.Waiting()
		if (err == nil) != tt.ok {
			t.Errorf("%s %s: Waiting error %v, want ok %v", tt.cli, tt.event, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		if w.Kind != Wake || w.String() != "claude Stop --wait" || w.State(Input{}) != "" {
			t.Errorf("waiting %+v: kind %v, name %q, state %q", w, w.Kind, w.String(), w.State(Input{}))
		}
		if got := string(Output(w, "hm: 1 message")); got != "hm: 1 message\n" {
			t.Errorf("output %q, want the text and a newline", got)
		}
		if Output(w, "") != nil {
			t.Error("empty text has an output")
		}
	}
}
