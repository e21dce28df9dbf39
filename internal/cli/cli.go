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

	"hm/internal/hook"
	"hm/internal/layout"
	"hm/roles"
)

// Env is what a command may touch of the process: its streams, environment
// and working directory. Tests pass their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string

	// describe, when set, is given a command's flag set instead of its
	// help being printed (hm completion reads the commands' flags so).
	describe func(fs *flag.FlagSet)
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
		{name: "send", summary: "send a message (same as hm-send)", run: runSend},
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

// flagLike matches what is taken as a flag: -x, --name, --name=value.
var flagLike = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9-]*(=.*)?$`)

// parseArgs parses fs's flags wherever they appear among args (so
// `hm send builder hello --json` works) and returns the positionals. Only
// known flags are taken; "--" ends flag parsing.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !flagLike.MatchString(a) {
			pos = append(pos, a) // message text such as "-5" or "-all good"
			i++
			continue
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); (name == "h" || name == "help") && fs.Lookup(name) == nil {
			return nil, flag.ErrHelp
		}
		n, err := takeFlag(fs, args, i, &flags)
		if err != nil {
			return nil, err
		}
		i = n
	}
	if err := setFlags(fs, flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// setFlags sets fs's flags from flags, known flags each with its value as
// takeFlag collected them ("--name value", "--name=value", a bool flag
// alone). A value a flag does not take is an error that names the flag as
// the person wrote it and what it wants.
func setFlags(fs *flag.FlagSet, flags []string) error {
	for i := 0; i < len(flags); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(flags[i], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case hasValue:
		case isBoolFlag(f):
			value = "true"
		default:
			i++
			value = flags[i]
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s %q: %s", flagName(name), value, wants(f, err))
		}
	}
	return nil
}

// isBoolFlag reports whether f is a flag without a value (--json).
func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// flagName is how help shows a flag: -f for one letter, else --name.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// valueKind is the kind of value f takes ("string", "int", "duration",
// "float", …; "" for a bool flag), from its type alone.
func valueKind(f *flag.Flag) string {
	kind, _ := flag.UnquoteUsage(&flag.Flag{Value: f.Value})
	return kind
}

// wants says what f takes, for a value it refused with err.
func wants(f *flag.Flag, err error) string {
	switch valueKind(f) {
	case "int", "uint":
		return "want a whole number"
	case "float":
		return "want a number"
	case "duration":
		return "want a duration such as 500ms, 30s or 2m"
	case "":
		return "want true or false"
	}
	return err.Error()
}

// unknownFlag is the error for a flag fs does not define, suggesting the
// nearest one it does.
func unknownFlag(fs *flag.FlagSet, arg string) error {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	hint := ""
	if s := roles.Suggest(name, names); s != "" {
		hint = "; did you mean " + flagName(s) + "?"
	}
	return fmt.Errorf("unknown flag %s%s", arg, hint)
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

// newFlags is a command's flag set. It prints nothing itself: usageError
// and printHelp say what there is to say.
func newFlags(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// usageError answers a command's usage error err: one line saying what is
// wrong, the command's synopsis and where its help is, on stderr, exit 2.
// For -h/--help (flag.ErrHelp) it prints the command's help on stdout,
// exit 0.
func usageError(env Env, fs *flag.FlagSet, synopsis string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		if env.describe != nil { // hm completion reads the flags
			env.describe(fs)
			return ExitOK
		}
		printHelp(env.Stdout, fs, synopsis)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "hm %s: %v\n", fs.Name(), err)
	}
	fmt.Fprintln(env.Stderr, "usage: "+synopsis)
	fmt.Fprintf(env.Stderr, "run 'hm help %s' for its flags\n", fs.Name())
	return ExitUsage
}
