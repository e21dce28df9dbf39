package cli

import (
	"context"
	"errors"
	"fmt"

	"hm/internal/initwire"
)

const initSynopsis = "hm init [--root D] [--agents claude,codex,gemini] [--dry-run] [--undo]"

// runInit: `hm init` wires the root's repository for Claude Code, Codex and
// Gemini CLI: hm's MCP server, hooks and instructions (docs/protocol.md
// §15). The work is in internal/initwire.
func runInit(_ context.Context, env Env, args []string) int {
	fs := newFlags("init", env)
	root := rootFlag(fs)
	agents := fs.String("agents", "", "CLIs to wire, comma-separated (default: claude,codex,gemini)")
	dryRun := fs.Bool("dry-run", false, "print the changes as a unified diff and write nothing")
	undo := fs.Bool("undo", false, "restore every file from its .hm.bak backup and remove the files hm init created")
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
	opts := initwire.Options{Root: l.Root, Agents: list, DryRun: *dryRun, Undo: *undo, Out: env.Stdout}
	if err := initwire.Run(opts); err != nil {
		fmt.Fprintln(env.Stderr, "hm init:", err)
		return ExitFailed
	}
	return ExitOK
}
