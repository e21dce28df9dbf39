// Package cli implements hm's subcommands. The binaries in cmd/ are thin
// mains over Main, Send and Bg.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"hm/agent"

	"hm/internal/layout"
)

// Env is what a command may touch of the process: its streams, environment
// and working directory. Tests pass their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// OSEnv is the real process environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Exit codes.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitUsage   = 2
	usageHeader = "usage: hm <command> [flags]\n"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) int
}

func commands() []command {
	return []command{
		{"up", "run the hub in the foreground", runUp},
		{"send", "send a message (same as hm-send)", runSend},
		{"bg", "control background builder slots (same as hm-bg)", runBg},
		{"status", "show hub, session, panes, slots and telegram", runStatus},
		{"attach", "attach to a pane (detach with Ctrl-\\)", runAttach},
		{"ui", "print a one-time login URL for the web cockpit (http://127.0.0.1:<port>/ui/)", runUI},
		{"comms", "ledger rows: history, search, tail", runComms},
		{"briefing", "print the startup briefing", runBriefing},
		{"handoff", "write and print the session handoff", runHandoff},
		{"journal", "journal verify / checkpoint: check the keyed hash chain; sign its head", runJournal},
		{"receipt", "mark a message delivered.verified from a CLI hook payload on stdin", runReceipt},
		{"hook", "the command CLI hooks run: receipts, queued messages and the session as context", runHook},
		{"mcp", "serve hm's tools (hm_send, hm_inbox, hm_ack, …) to an MCP client over stdio (--http: loopback HTTP; --channel: Claude channel pushes)", runMCP},
		{"doctor", "check root, port, permissions, ledger and configured commands", runDoctor},
		{"token", "token rotate: replace the operator secret", runToken},
		{"init", "wire this repository for Claude Code, Codex and Gemini CLI: MCP server, hooks, instructions", runInit},
		{"version", "print hm's version and the commit it was built from", runVersion},
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
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(env.Stdout)
		return ExitOK
	}
	if args[0] == versionFlag {
		return runVersion(ctx, env, args[1:])
	}
	if args[0] == agent.KeeperCommand { // started by the hub beside each pane program
		if err := agent.RunKeeper(agent.KeeperGrace); err != nil {
			fmt.Fprintln(env.Stderr, "hm:", err)
			return ExitFailed
		}
		return ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.Stderr, "hm: unknown command %q\n", args[0])
	usage(env.Stderr)
	return ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, usageHeader+"\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}

// Send runs hm-send.
func Send(args []string, env Env) int { return entry("hm-send", "send", args, env) }

// Bg runs hm-bg.
func Bg(args []string, env Env) int { return entry("hm-bg", "bg", args, env) }

// entry runs the program name (hm-send, hm-bg) as `hm <cmd> args`; its
// sole --version prints the version under its own name.
func entry(name, cmd string, args []string, env Env) int {
	if len(args) == 1 && args[0] == versionFlag {
		printVersion(env.Stdout, name)
		return ExitOK
	}
	return Main(append([]string{cmd}, args...), env)
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
		return Send(argv[1:], env)
	case "hm-bg":
		return Bg(argv[1:], env)
	}
	return Main(argv[1:], env)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" }

// subcommandUsage answers a command that needs a subcommand when it got
// none or asked for help: the synopsis on stdout and exit 0 for -h/--help,
// else on stderr and exit 2.
func subcommandUsage(env Env, args []string, synopsis string) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, "usage: "+synopsis)
		return ExitOK
	}
	fmt.Fprintln(env.Stderr, "usage: "+synopsis)
	return ExitUsage
}

// flagLike matches what is taken as a flag: -x, --name, --name=value.
var flagLike = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9-]*(=.*)?$`)

// parseArgs parses fs's flags wherever they appear among args (so
// `hm send builder hello --json` works) and returns the positionals. Only
// known flags are taken; "--" ends flag parsing.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !flagLike.MatchString(a) {
			pos = append(pos, a) // message text such as "-5" or "-all good"
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				return nil, flag.ErrHelp
			}
			return nil, fmt.Errorf("unknown flag %s", a)
		}
		flags = append(flags, a)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() || hasValue {
			continue
		}
		if i+1 >= len(args) {
			return nil, fmt.Errorf("flag %s needs a value", a)
		}
		i++
		flags = append(flags, args[i])
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// The flags every command shares are defined here once, so that --root,
// --port and --json mean the same in each.

// rootFlag defines --root, the coordination root, on fs.
func rootFlag(fs *flag.FlagSet) *string {
	return fs.String("root", "", "coordination root (default: $SQUIDRUN_ROOT, nearest .squidrun/, or the working directory)")
}

// findRoot finds the layout --root (the value of rootFlag) names.
func findRoot(env Env, root string) (layout.Layout, error) {
	return layout.FindRoot(root, env.Getenv)
}

// portFlag defines --port, the port of the hub to talk to, on fs. 0 finds
// it: $HM_PORT, $HM_SEND_PORT, hub.json, else 9900 (see discover). `hm up`,
// which listens rather than connects, defines its own.
func portFlag(fs *flag.FlagSet) *int {
	return fs.Int("port", 0, "hub port (default: $HM_PORT, the running hub's hub.json, or 9900)")
}

// jsonFlag defines --json on fs; what names what is printed as JSON.
func jsonFlag(fs *flag.FlagSet, what string) *bool {
	return fs.Bool("json", false, "print "+what+" as JSON")
}

func newFlags(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// usageError prints err and fs's usage; exit code 2 (0 for -h).
func usageError(env Env, fs *flag.FlagSet, synopsis string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(env.Stdout, "usage: "+synopsis)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "hm %s: %v\n", fs.Name(), err)
	}
	fmt.Fprintln(env.Stderr, "usage: "+synopsis)
	fs.PrintDefaults()
	return ExitUsage
}
