package cli

import (
	"context"
	"fmt"
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
