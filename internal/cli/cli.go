// Package cli implements hm's subcommands. The binaries in cmd/ are thin
// mains: cmd/hm over Run, cmd/hm-bg over Bg; cmd/hm-send is
// internal/sendcmd alone, which `hm send` runs too.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"hm/agent"
	"hm/internal/cmdline"
	"hm/internal/hook"
	"hm/internal/sendcmd"
	"hm/roles"
)

// command is one entry of hm's one command table: what dispatches, what
// help lists and what shell completion offers all come from it.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) int
	subs    []command // subcommands (hm comms history): run dispatches to them (runSub)
	words   []string  // the words its first argument may be, offered by completion (hm bg spawn)
}

func commands() []command {
	return []command{
		{name: "up", summary: "run the hub in the foreground", run: runUp},
		{name: "restart", summary: "stop the running hub leaving its panes, run a new one that adopts them", run: runRestart},
		{name: "reload", summary: "apply a changed settings.json to the running hub: panes added, removed or changed, the others untouched", run: runReload},
		{name: "send", summary: sendcmd.Summary, run: sendcmd.Run},
		{name: "bg", summary: "control background builder slots (same as hm-bg)", run: runBg, words: bgActions},
		{name: "status", summary: "show hub, session, panes, slots and telegram", run: runStatus},
		{name: "attach", summary: "attach to a pane (detach with Ctrl-\\)", run: runAttach},
		{name: "ui", summary: "print a one-time login URL for the web cockpit (http://127.0.0.1:<port>/ui/)", run: runUI},
		{name: "comms", summary: "ledger rows: history, search, tail", run: runComms, subs: commsCommands()},
		{name: "briefing", summary: "print the startup briefing", run: runBriefing},
		{name: "handoff", summary: "write and print the session handoff", run: runHandoff},
		{name: "journal", summary: "journal verify / checkpoint: check the keyed hash chain; sign its head", run: runJournal, subs: journalCommands()},
		{name: "receipt", summary: "mark a message delivered.verified from a CLI hook payload on stdin", run: runReceipt},
		{name: "hook", summary: "the command CLI hooks run: receipts, queued messages and the session as context", run: runHook, words: hook.CLIs},
		{name: "mcp", summary: "serve hm's tools (hm_send, hm_inbox, hm_ack, …) to an MCP client over stdio (--http: loopback HTTP; --channel: Claude channel pushes)", run: runMCP},
		{name: "doctor", summary: "check root, port, permissions, ledger and configured commands", run: runDoctor},
		{name: "token", summary: "token rotate: replace the operator secret", run: runToken, words: []string{tokenRotate}},
		{name: "init", summary: "wire this repository for Claude Code, Codex and Gemini CLI: MCP server, hooks, instructions", run: runInit},
		{name: "version", summary: "print hm's version and the commit it was built from", run: runVersion},
		{name: "help", summary: "print a command's help: hm help <command> [<subcommand>]", run: runHelp},
		{name: "completion", summary: "print a shell completion script: hm completion bash|zsh|fish", run: runCompletion, words: completionShells},
	}
}

// Main runs `hm <args>` and returns the exit code.
func Main(args []string, env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return MainContext(ctx, args, env)
}

// MainContext is Main with a caller-owned context.
func MainContext(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	switch {
	case len(args) > 0 && args[0] == versionFlag:
		return runVersion(ctx, env, args[1:])
	case len(args) > 0 && args[0] == agent.KeeperCommand: // started by the hub beside each pane program
		if err := agent.RunKeeper(); err != nil {
			fmt.Fprintln(env.Stderr, "hm:", err)
			return ExitFailed
		}
		return ExitOK
	}
	return runSub(ctx, env, "hm", commands(), args)
}

// runSub runs the command of cmds args[0] names with the rest of args;
// parent is what runs them ("hm", "hm comms"). Without a name, or with
// -h/--help, it prints parent's usage; an unknown name is a usage error
// that suggests the nearest one.
func runSub(ctx context.Context, env Env, parent string, cmds []command, args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		w, code := env.Stderr, ExitUsage
		if len(args) > 0 {
			w, code = env.Stdout, ExitOK
		}
		printUsage(w, parent, cmds)
		return code
	}
	if c, ok := findCommand(cmds, args[0]); ok {
		return c.run(ctx, env, args[1:])
	}
	fmt.Fprintf(env.Stderr, "%s: unknown %s %q%s\n", parent, commandWord(parent), args[0], didYouMean(args[0], commandNames(cmds)))
	fmt.Fprintln(env.Stderr, helpHint(parent))
	return ExitUsage
}

// commandWord is what parent ("hm", "hm comms") calls its commands.
func commandWord(parent string) string {
	if parent == "hm" {
		return "command"
	}
	return "subcommand"
}

// helpHint says where the list of parent's commands is.
func helpHint(parent string) string {
	return fmt.Sprintf("run 'hm help%s' for the %ss", strings.TrimPrefix(parent, "hm"), commandWord(parent))
}

// findCommand finds the command name names in cmds.
func findCommand(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames(cmds []command) []string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	return names
}

// didYouMean is "; did you mean X?" for the name among names nearest to
// name (roles.Suggest, hm's one rule for it), or "".
func didYouMean(name string, names []string) string {
	if s := roles.Suggest(name, names); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}

// usage prints hm's usage: the commands.
func usage(w io.Writer) { printUsage(w, "hm", commands()) }

// printUsage prints the usage of parent ("hm", "hm comms"): its commands
// with their summaries, and where the help of each is.
func printUsage(w io.Writer, parent string, cmds []command) {
	what := commandWord(parent)
	fmt.Fprintf(w, "usage: %s <%s> [flags]\n\n%ss:\n", parent, what, what)
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "\nrun 'hm help %s<%s>' for its flags\n", strings.TrimPrefix(parent+" ", "hm "), what)
	if parent == "hm" {
		fmt.Fprintln(w, "hm-send and hm-bg are hm send and hm bg; hm --version prints the version")
	}
}

// Bg runs hm-bg: `hm bg args`; its sole --version prints the version
// under its own name.
func Bg(args []string, env Env) int {
	if cmdline.AnswerVersion(env, "hm-bg", args) {
		return ExitOK
	}
	return Main(append([]string{"bg"}, args...), env)
}

// Run runs the program argv names (argv[0], then its arguments): one
// binary is hm, and hm-send or hm-bg when started through a link of that
// name (make build, make install).
func Run(argv []string, env Env) int {
	if len(argv) == 0 {
		return Main(nil, env)
	}
	switch name := strings.TrimSuffix(filepath.Base(argv[0]), ".exe"); name {
	case "hm-send":
		return sendcmd.Main(argv[1:], env)
	case "hm-bg":
		return Bg(argv[1:], env)
	}
	return Main(argv[1:], env)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" }
