package cli

import (
	"context"
	"errors"
	"fmt"

	"hm/internal/initwire"
	"hm/roles"
)

const initSynopsis = "hm init [--root D] [--agents claude,codex,gemini] [--local] [--dry-run] [--undo]"

// runInit: `hm init` wires the root's repository for Claude Code, Codex and
// Gemini CLI: hm's MCP server, hooks and instructions (docs/protocol.md
// §15). The work is in internal/initwire.
func runInit(_ context.Context, env Env, args []string) int {
	fs := newFlags("init", env)
	root := rootFlag(fs)
	agents := fs.String("agents", "", "CLIs to wire, comma-separated (default: claude,codex,gemini)")
	dryRun := fs.Bool("dry-run", false, "print the changes as a unified diff and write nothing")
	undo := fs.Bool("undo", false, "restore every file from its .hm.bak backup and remove the files hm init created")
	local := fs.Bool("local", false, "wire only you, in files git does not track (.claude/settings.local.json, CLAUDE.local.md); without it hm init writes the files the repository commits, for everyone")
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) > 0 {
		err = errors.New("hm init takes no arguments")
	}
	var list []string
	if err == nil {
		list, err = initwire.ParseAgents(*agents)
	}
	if err != nil {
		return usageError(env, fs, initSynopsis, err)
	}
	l, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm init:", err)
		return ExitFailed
	}
	opts := initwire.Options{Root: l.Root, Agents: list, DryRun: *dryRun, Undo: *undo, Local: *local, Out: env.Stdout}
	if err := initwire.Run(opts); err != nil {
		fmt.Fprintln(env.Stderr, "hm init:", err)
		return ExitFailed
	}
	if !*undo && !roles.OnPath("hm", env.Getenv("PATH")) {
		fmt.Fprintln(env.Stderr, "hm init: warning: hm is not on PATH, and the wired hooks and MCP entries run a bare `hm`:"+
			" the agents will not find it. Put it there (make install, or export PATH=<dir of hm>:$PATH in the shell that starts the agents).")
	}
	return ExitOK
}
