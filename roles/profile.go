package roles

import "strings"

// Profile names (SPEC §3, §6): a pane's profile selects how messages are
// typed into it.
const (
	ProfileClaude  = "claude"  // Claude Code
	ProfileCodex   = "codex"   // Codex CLI
	ProfileGemini  = "gemini"  // Gemini CLI
	ProfileShell   = "shell"   // an interactive shell: message text is never typed as a command
	ProfileDefault = "default" // any other program
)

// maxInferDepth bounds how deeply InferProfile follows command strings
// nested in "sh -c", "env -S" or "npx -c".
const maxInferDepth = 8

// InferProfile guesses the profile of a pane from its command line (run with
// /bin/sh -c) when settings.json names none. It is the one place hm does so.
//
// It reads the line as the shell would, quotes included, and sees through
// leading VAR=value assignments and the wrappers exec, env (-i, -u NAME,
// -S STRING, VAR=value…), nohup, command, nice, time, setsid, caffeinate,
// stdbuf and sudo (su, "sudo -s" and "sudo -i" are shells); through "sh -c '…'", "bash -lc \"…\"" and the like (the
// nested command decides); through npx/bunx/"npm exec"/"pnpm dlx"/"yarn
// dlx"/"bun x" packages (@openai/codex, @google/gemini-cli,
// @anthropic-ai/claude-code) and node/bun/deno scripts (…/bin/gemini,
// …/node_modules/@openai/codex/…). Programs are matched by base name,
// lower-cased, as claude, codex or gemini exactly or followed by one of
// "-_.@" (claude-code, gemini-cli, codex.js).
//
// A shell (sh, bash, zsh, fish, dash, ksh, …, or $SHELL) with no command or
// script to run, only flags such as -l or -i, is "shell", so that message
// text is typed as an inert comment and never executed. A shell running a
// script is "default".
//
// In a line of several commands (;, &&, ||, &, newlines) the last one that
// is not "default" decides (so "cd /repo && exec claude" is claude); in a
// pipeline the first command, which reads the terminal, does. Anything
// else, an empty line included, is "default".
func InferProfile(command string) string {
	return inferLine(command, 0)
}

// inferLine classifies a command line.
func inferLine(line string, depth int) string {
	if depth > maxInferDepth {
		return ProfileDefault
	}
	result := ProfileDefault
	for _, cmd := range splitCommands(line) {
		if p := inferCommand(cmd, depth); p != ProfileDefault {
			result = p
		}
	}
	return result
}

// shells are the programs InferProfile treats as shells.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "mksh": true,
	"oksh": true, "pdksh": true, "yash": true, "ash": true, "tcsh": true, "csh": true, "nu": true,
	"elvish": true, "xonsh": true,
}

// reservedWords may start a command in a shell line; they are skipped.
var reservedWords = map[string]bool{
	"{": true, "}": true, "!": true, "if": true, "then": true, "else": true, "elif": true,
	"fi": true, "do": true, "done": true, "while": true, "until": true,
}

// wrappers run the rest of their arguments as a command, after options; the
// value lists the options that take an argument.
var wrappers = map[string]map[string]bool{
	"exec":       {"-a": true},
	"nohup":      {},
	"setsid":     {},
	"nice":       {"-n": true, "--adjustment": true},
	"time":       {"-o": true, "-f": true, "--output": true, "--format": true},
	"caffeinate": {"-t": true, "-w": true},
	"stdbuf":     {"-i": true, "-o": true, "-e": true},
	"sudo": {"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true,
		"-t": true, "-U": true, "-T": true, "-R": true},
	"env": {"-u": true, "-C": true, "-P": true, "--unset": true, "--chdir": true},
}

// inferCommand classifies one simple command given as words.
func inferCommand(w []string, depth int) string {
	for len(w) > 0 {
		word := w[0]
		if IsAssignment(word) || reservedWords[word] {
			w = w[1:]
			continue
		}
		if isShellVar(word) {
			return shellArgs(w[1:], depth)
		}
		name := progName(word)
		switch name {
		case "command", "builtin":
			rest := w[1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "--" {
				if strings.ContainsAny(rest[0], "vV") {
					return ProfileDefault // command -v: a lookup, runs nothing
				}
				rest = rest[1:]
			}
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			w = rest
			continue
		case "env":
			rest := w[1:]
		envOpts:
			for len(rest) > 0 {
				a := rest[0]
				switch {
				case strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "--split-string"):
					// env -S STRING: STRING is split into words and run.
					if depth >= maxInferDepth {
						return ProfileDefault
					}
					depth++
					arg, after := optionValue(rest, "-S", "--split-string")
					rest = append(splitWords(arg), after...)
					break envOpts
				case a == "--":
					rest = rest[1:]
					break envOpts
				case a == "-" || len(a) > 1 && a[0] == '-':
					if wrappers["env"][a] && len(rest) > 1 {
						rest = rest[1:]
					}
					rest = rest[1:]
				default:
					break envOpts
				}
			}
			w = rest
			continue
		case "su":
			// su [options] [user]: a login shell unless -c gives a command.
			for i := 1; i < len(w); i++ {
				if w[i] == "-c" || w[i] == "--command" {
					if i+1 < len(w) {
						return inferLine(w[i+1], depth+1)
					}
					return ProfileDefault
				}
				if v, ok := strings.CutPrefix(w[i], "--command="); ok {
					return inferLine(v, depth+1)
				}
			}
			return ProfileShell
		case "sudo":
			// sudo -s / sudo -i without a command start a shell.
			rest := skipOptions(w[1:], wrappers["sudo"], false)
			if len(rest) == 0 {
				for _, a := range w[1:] {
					if a == "--shell" || a == "--login" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "si") {
						return ProfileShell
					}
				}
			}
			w = rest
			continue
		case "npx", "bunx", "pnpx":
			return packageRunner(w[1:], depth)
		case "npm", "pnpm", "yarn", "bun":
			if len(w) > 1 {
				switch w[1] {
				case "exec", "x", "dlx":
					return packageRunner(w[2:], depth)
				case "run":
					if name == "bun" {
						return script(w[2:])
					}
				}
			}
			if name == "bun" {
				return script(w[1:])
			}
			return ProfileDefault
		case "node", "nodejs", "tsx", "ts-node":
			return script(w[1:])
		case "deno":
			if len(w) > 1 && w[1] == "run" {
				return script(w[2:])
			}
			return ProfileDefault
		case "busybox":
			w = w[1:] // the applet name follows
			continue
		}
		if opts, ok := wrappers[name]; ok {
			w = skipOptions(w[1:], opts, false)
			continue
		}
		if shells[name] {
			return shellArgs(w[1:], depth)
		}
		return agentName(name)
	}
	return ProfileDefault
}

// shellArgs classifies a shell by its arguments: with -c it runs the first
// non-option argument as a command line; with another argument it runs a
// script; with flags only it is interactive.
func shellArgs(args []string, depth int) string {
	runsCommand := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) && runsCommand {
				return inferLine(args[i+1], depth+1)
			}
			if i+1 < len(args) {
				return ProfileDefault // a script
			}
			return ProfileShell
		case a == "--command":
			runsCommand = true
		case strings.HasPrefix(a, "--command="):
			return inferLine(strings.TrimPrefix(a, "--command="), depth+1)
		case a == "--rcfile" || a == "--init-file" || a == "--init-command":
			i++ // takes an argument
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			flags := a[1:]
			if a[0] == '-' && strings.ContainsRune(flags, 'c') {
				runsCommand = true
			}
			if last := flags[len(flags)-1]; last == 'o' || last == 'O' {
				i++ // -o option / +O shopt take an argument
			}
		default:
			if runsCommand {
				return inferLine(a, depth+1)
			}
			return ProfileDefault // a script
		}
	}
	if runsCommand {
		return ProfileDefault // "sh -c" with nothing to run
	}
	return ProfileShell
}

// packageRunner classifies "npx [options] package [args]".
func packageRunner(args []string, depth int) string {
	var pkgs []string
loop:
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			args = args[1:]
			break loop
		case a == "-p" || a == "--package":
			if len(args) > 1 {
				pkgs = append(pkgs, args[1])
				args = args[1:]
			}
		case strings.HasPrefix(a, "--package="):
			pkgs = append(pkgs, strings.TrimPrefix(a, "--package="))
		case a == "-c" || a == "--call":
			if len(args) > 1 {
				return inferLine(args[1], depth+1)
			}
			return ProfileDefault
		case strings.HasPrefix(a, "-"):
		default:
			break loop
		}
		args = args[1:]
	}
	if len(args) > 0 {
		pkgs = append([]string{args[0]}, pkgs...)
	}
	for _, p := range pkgs {
		if prof := packageProfile(p); prof != ProfileDefault {
			return prof
		}
	}
	return ProfileDefault
}

// packageProfile classifies an npm package spec such as @openai/codex@latest.
func packageProfile(spec string) string {
	s := spec
	if strings.HasPrefix(s, "@") {
		if i := strings.IndexByte(s[1:], '@'); i >= 0 {
			s = s[:i+1]
		}
	} else if i := strings.IndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	return agentName(progName(s))
}

// script classifies "node [options] script [args]" by the script's name or,
// under node_modules, by its package.
func script(args []string) string {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "-e" || a == "--eval" || a == "-p" || a == "--print":
			return ProfileDefault // inline code
		case a == "-r" || a == "--require" || a == "--import" || a == "--loader" || a == "--experimental-loader":
			args = args[min(2, len(args)):]
			continue
		case a == "--":
			args = args[1:]
			if len(args) == 0 {
				return ProfileDefault
			}
		case strings.HasPrefix(a, "-"):
			args = args[1:]
			continue
		}
		path := args[0]
		if p := agentName(progName(path)); p != ProfileDefault {
			return p
		}
		parts := strings.Split(path, "/")
		for i, part := range parts {
			if part != "node_modules" || i+1 >= len(parts) {
				continue
			}
			pkg := parts[i+1]
			if strings.HasPrefix(pkg, "@") && i+2 < len(parts) {
				pkg += "/" + parts[i+2]
			}
			return packageProfile(pkg)
		}
		return ProfileDefault
	}
	return ProfileDefault
}

// agentName maps a lower-cased program name to its agent profile.
func agentName(name string) string {
	for _, agent := range [...]string{ProfileClaude, ProfileCodex, ProfileGemini} {
		rest, ok := strings.CutPrefix(name, agent)
		if ok && (rest == "" || strings.ContainsRune("-_.@", rune(rest[0]))) {
			return agent
		}
	}
	return ProfileDefault
}
