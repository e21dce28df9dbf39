package initwire

import (
	"fmt"
	"strings"
)

// Agents are the CLIs hm init wires, in the order it wires them.
var Agents = []string{"claude", "codex", "gemini"}

// target is one change hm init makes to one file: apply returns the new
// content and a note saying what changed ("" and data itself when nothing
// did). hint is what the person has to do once after such a change.
type target struct {
	rel   string // slash-separated, relative to the root
	apply func(name string, data []byte) ([]byte, string, error)
	hint  string
}

// targets lists what hm init does for agent.
func targets(agent string) []target {
	mcp := func(key string) func(*jsonDoc) (string, error) {
		return func(d *jsonDoc) (string, error) {
			changed, err := d.setMCPServer(key)
			if !changed {
				return "", err
			}
			return "MCP server hm (hm mcp)", err
		}
	}
	hooks := func(d *jsonDoc) (string, error) {
		added, removed, err := d.setHooks(Hooks(agent))
		var notes []string
		if len(added) > 0 {
			notes = append(notes, "hooks "+strings.Join(added, ", "))
		}
		if removed > 0 {
			notes = append(notes, fmt.Sprintf("removed %d `hm receipt` hook(s)", removed))
		}
		return strings.Join(notes, "; "), err
	}
	codexMCP := func(name string, data []byte) ([]byte, string, error) {
		out, changed, err := setCodexMCP(name, data)
		if !changed {
			return data, "", err
		}
		return out, "MCP server hm (hm mcp)", err
	}
	switch agent {
	case "claude":
		return []target{
			{".mcp.json", jsonEdit(mcp("mcpServers")), "Claude Code asks once to approve the project's MCP server hm (.mcp.json)."},
			{".claude/settings.json", jsonEdit(hooks), "Claude Code reads hooks at start: restart running sessions (/hooks shows them)."},
			{"CLAUDE.md", instructions, ""},
		}
	case "codex":
		return []target{
			{".codex/config.toml", codexMCP, "Codex reads a project's .codex/config.toml only once you trust the project."},
			{".codex/hooks.json", jsonEdit(hooks), "Codex asks you to review and trust the new hooks once (/hooks) before they run."},
			{"AGENTS.md", instructions, ""},
		}
	case "gemini":
		return []target{
			{".gemini/settings.json", jsonEdit(mcp("mcpServers"), hooks), "Gemini CLI warns once before it runs new project hooks (/hooks panel lists them)."},
			{"GEMINI.md", instructions, ""},
		}
	}
	return nil
}

// jsonEdit runs each edit on the file, parsed once (so that an error's line
// is the file's); the file is rewritten only when an edit reports a change.
func jsonEdit(edits ...func(*jsonDoc) (string, error)) func(string, []byte) ([]byte, string, error) {
	return func(name string, data []byte) ([]byte, string, error) {
		d, err := parseJSON(name, data)
		if err != nil {
			return nil, "", err
		}
		var notes []string
		for _, e := range edits {
			note, err := e(d)
			if err != nil {
				return nil, "", err
			}
			if note != "" {
				notes = append(notes, note)
			}
		}
		if len(notes) == 0 {
			return data, "", nil
		}
		return d.bytes(), strings.Join(notes, "; "), nil
	}
}

func instructions(_ string, data []byte) ([]byte, string, error) {
	out := setBlock(data, InstructionsBody)
	if string(out) == string(data) {
		return data, "", nil
	}
	return out, "instructions block", nil
}

// InstructionsBody is what hm init puts between the markers in CLAUDE.md,
// AGENTS.md and GEMINI.md: the same text for every CLI, since one file may
// serve several (AGENTS.md linked as CLAUDE.md).
const InstructionsBody = `## Working in an hm team

_Written by ` + "`hm init`" + `; hm rewrites this block (between the hm markers) on every run. Edit outside it._

You are one agent of a team that hm coordinates: architect, builder, oracle, and the
builder's background builders builder-bg-1..3. **Your role is in ` + "`$SQUIDRUN_ROLE`" + `**
(` + "`echo $SQUIDRUN_ROLE`" + `); hm also names it in the first message of your session. Without
it you are not in an hm pane: you act as ` + "`user`" + `, the human.

**Receiving.** A message reaches you as ` + "`[AGENT MSG - reply via hm-send] (ARCH #12): …`" + `
ending in a marker ` + "`[hm:<id>]`" + `, or as context that hm's hooks add to your prompt. The
marker proves you got it; leave it in place.

**Replying.** Run ` + "`hm-send <role> \"message\"`" + ` in the shell, or call the MCP tool
` + "`hm_send`" + ` (` + "`to`, `body`" + `). Targets: architect, builder, oracle, all, user (the human).
hm adds your header ` + "`(ROLE #N):`" + ` and numbers your messages; name a message you answer
as ` + "`HEADER #N`" + ` (` + "`ACK ARCH #12: done`" + `). Long text: ` + "`hm-send <role> --file F`" + `. Other MCP
tools: ` + "`hm_inbox`" + ` (your unread messages; reading changes nothing), ` + "`hm_ack`" + ` (confirm you
read them), ` + "`hm_search`, `hm_get`, `hm_timeline`" + ` (history), ` + "`hm_status`" + ` (the team and what
you owe).

**Priority tags**, right after the header:
- ` + "`[ACK REQUIRED]`" + ` — answer with a message that names it (` + "`ACK ARCH #12: …`" + `); it stays an
  open obligation, with a reminder after 10 minutes, until you do.
- ` + "`[URGENT]`" + ` — deal with it before anything else.
- ` + "`[TASK]`" + ` — work for you: do it, then report done or blocked.
- ` + "`[FYI]`" + ` — no answer needed.

**Check-in protocol.**
1. At session start read what hm gives you (your session line, the briefing, or
   ` + "`.squidrun/handoffs/session.md`" + `), then check ` + "`hm_inbox`" + ` and ` + "`hm_status`" + ` for unread
   messages and obligations you owe.
2. Answer every ` + "`[ACK REQUIRED]`" + ` and take every ` + "`[TASK]`" + ` addressed to you; report results
   to whoever asked, with evidence (commands run, tests passing).
3. Start a line with ` + "`DECISION:`, `TASK:`, `FINDING:` or `BLOCKER:`" + ` to have hm record it for
   the next session's briefing.
4. A background builder (builder-bg-N) reports to builder only.
5. Before you stop, check your inbox once more.
`
