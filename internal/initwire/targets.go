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
	// gitDir: the file is in .git/, and written only when .git is a
	// directory of the root's own (gitDirProblem).
	gitDir bool
}

// Scope is where hm init writes: the files a repository commits, shared by
// everyone who clones it, or the per-user files beside them (hm init
// --local) that git does not track.
type Scope int

const (
	ScopeProject Scope = iota
	ScopeLocal
)

// Scopes lists every scope, for what must know all of hm init's files.
var Scopes = []Scope{ScopeProject, ScopeLocal}

// targets lists what hm init does for agent in scope.
func targets(agent string, scope Scope) []target {
	if scope == ScopeLocal {
		return localTargets(agent)
	}
	mcp := func(key string) func(*jsonDoc) (string, error) {
		return func(d *jsonDoc) (string, error) {
			changed, err := d.setMCPServer(key)
			if !changed {
				return "", err
			}
			return "MCP server hm (hm mcp)", err
		}
	}
	hooks := hooksEdit(agent)
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
			{rel: ".mcp.json", apply: jsonEdit(mcp("mcpServers")), hint: "Claude Code asks once to approve the project's MCP server hm (.mcp.json)."},
			{rel: ".claude/settings.json", apply: jsonEdit(hooks), hint: "Claude Code reads hooks at start: restart running sessions (/hooks shows them)."},
			{rel: "CLAUDE.md", apply: instructions},
		}
	case "codex":
		return []target{
			{rel: ".codex/config.toml", apply: codexMCP, hint: "Codex reads a project's .codex/config.toml only once you trust the project."},
			{rel: ".codex/hooks.json", apply: jsonEdit(hooks), hint: "Codex asks you to review and trust the new hooks once (/hooks) before they run."},
			{rel: "AGENTS.md", apply: instructions},
		}
	case "gemini":
		return []target{
			{rel: ".gemini/settings.json", apply: jsonEdit(mcp("mcpServers"), hooks), hint: "Gemini CLI warns once before it runs new project hooks (/hooks panel lists them)."},
			{rel: "GEMINI.md", apply: instructions},
		}
	}
	return nil
}

// Per-user files (hm init --local). Claude Code reads .claude/settings.local.json
// over .claude/settings.json and CLAUDE.local.md beside CLAUDE.md; it keeps
// settings.local.json out of git only when it writes the file itself, so hm
// init lists both in .git/info/exclude, git's per-clone ignore file. Its
// per-user MCP servers live in ~/.claude.json, outside the repository.
// Codex (~/.codex/) and Gemini CLI (~/.gemini/settings.json) have no
// per-user file inside a repository: their user files apply to every
// project, so hm init --local leaves them to the person (localNone).
const (
	localSettingsRel = ".claude/settings.local.json"
	localClaudeMDRel = "CLAUDE.local.md"
	gitExcludeRel    = ".git/info/exclude"
)

func localTargets(agent string) []target {
	if agent != "claude" {
		return nil
	}
	return []target{
		{rel: localSettingsRel, apply: jsonEdit(hooksEdit(agent)), hint: "Claude Code reads hooks at start: restart running sessions (/hooks shows them). " +
			"hm's MCP server, per user, is kept in ~/.claude.json outside the repository: add it with `claude mcp add --scope local hm -- hm mcp`."},
		{rel: localClaudeMDRel, apply: instructions},
		{rel: gitExcludeRel, apply: gitExclude, gitDir: true},
	}
}

// localNone says, for a CLI without a per-user file in the repository,
// what hm init --local leaves to the person.
var localNone = map[string]string{
	"codex":  "Codex has no per-user file inside a repository (~/.codex/ applies to every project): wire it with `hm init --agents codex`, or add only the MCP server with `codex mcp add hm -- hm mcp`",
	"gemini": "Gemini CLI has no per-user file inside a repository (~/.gemini/settings.json applies to every project): wire it with `hm init --agents gemini`, or add only the MCP server with `gemini mcp add --scope user hm hm mcp`",
}

// excludeBody is what hm init --local keeps in .git/info/exclude.
const excludeBody = "# Written by hm init --local: per-user hm wiring, not for commits.\n/" + localSettingsRel + "\n/" + localClaudeMDRel + "\n"

func gitExclude(_ string, data []byte) ([]byte, string, error) {
	out := hashMarkers.setBlock(data, excludeBody)
	if string(out) == string(data) {
		return data, "", nil
	}
	return out, "git ignores " + localSettingsRel + " and " + localClaudeMDRel + " in this clone", nil
}

// hooksEdit sets hm's hooks for agent in a settings file.
func hooksEdit(agent string) func(*jsonDoc) (string, error) {
	return func(d *jsonDoc) (string, error) {
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
	out := markdownMarkers.setBlock(data, InstructionsBody)
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

// allTargets is every target of agent, in every scope.
func allTargets(agent string) []target {
	var all []target
	for _, s := range Scopes {
		all = append(all, targets(agent, s)...)
	}
	return all
}

// targets is what this run does for agent: its scope's targets, less a
// file in .git/ when .git is not a directory of the root's own (its
// reason goes to w.skipped).
func (w *wiring) targets(agent string) []target {
	var out []target
	for _, t := range targets(agent, w.scope) {
		if t.gitDir {
			if why := w.gitDirProblem(); why != "" {
				w.skipped = append(w.skipped, t.rel+": "+why)
				continue
			}
		}
		out = append(out, t)
	}
	if w.scope == ScopeLocal && localNone[agent] != "" {
		w.skipped = append(w.skipped, agent+": "+localNone[agent])
	}
	return out
}

// gitDirProblem is why hm init does not write in .git/ ("" when it may):
// not a git repository, or .git is a file (a worktree or a submodule,
// whose git directory is elsewhere) or a link (hm init writes only inside
// the root).
func (w *wiring) gitDirProblem() string {
	fi, err := w.walk(".git")
	switch {
	case err != nil:
		return err.Error()
	case fi == nil:
		return "not a git repository, so nothing for git to ignore"
	case !fi.IsDir():
		return fmt.Sprintf(".git is %s, not a directory of this root (a worktree or submodule keeps its exclude file elsewhere, and hm init writes only inside the root): "+
			"add /%s and /%s to the file `git rev-parse --git-path info/exclude` names", kind(fi), localSettingsRel, localClaudeMDRel)
	}
	return ""
}
