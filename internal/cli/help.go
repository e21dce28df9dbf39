package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

const helpSynopsis = "hm help [<command> [<subcommand>]]"

// runHelp: `hm help` prints hm's usage; `hm help <command> [<subcommand>]`
// prints that command's help, as `hm <command> [<subcommand>] --help` does.
func runHelp(ctx context.Context, env Env, args []string) int {
	fs := newFlags("help", env)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageError(env, fs, helpSynopsis, err)
	}
	if len(pos) == 0 {
		usage(env.Stdout)
		return ExitOK
	}
	c, path, err := lookupPath(pos)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm help:", err)
		fmt.Fprintln(env.Stderr, helpHint(path))
		return ExitUsage
	}
	return c.run(ctx, env, []string{"--help"})
}

// lookupPath finds the command words names (comms history): the command,
// or an error suggesting the nearest name, with the path found so far
// ("hm", "hm comms"). Words after a command without subcommands are its
// arguments and not looked up.
func lookupPath(words []string) (command, string, error) {
	cmds, path := commands(), "hm"
	var c command
	for _, w := range words {
		found, ok := findCommand(cmds, w)
		if !ok {
			of := ""
			if path != "hm" {
				of = " of " + path
			}
			return command{}, path, fmt.Errorf("unknown %s %q%s%s", commandWord(path), w, of, didYouMean(w, commandNames(cmds)))
		}
		c, path = found, path+" "+w
		if len(found.subs) == 0 {
			break
		}
		cmds = found.subs
	}
	return c, path, nil
}

// printHelp prints a command's help: its synopsis, what it does, and its
// flags as they are typed (--name, -f).
func printHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintln(w, "usage: "+synopsis)
	if c, _, err := lookupPath(strings.Fields(fs.Name())); err == nil && c.summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.summary)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		left := flagName(f.Name)
		if kind := valueKind(f); kind != "" {
			left += " " + kind
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", left, f.Usage, defaultNote(f))
	})
	tw.Flush()
}

// defaultNote is " (default X)" for a flag whose default is not the zero
// value and whose usage does not already say it.
func defaultNote(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if strings.Contains(f.Usage, "default") {
		return ""
	}
	if valueKind(f) == "string" {
		return fmt.Sprintf(" (default %q)", f.DefValue)
	}
	return " (default " + f.DefValue + ")"
}
