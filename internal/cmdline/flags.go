package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"hm/internal/ground/layout"
	"hm/roles"
)

// flagLike reports whether a is taken as a flag: -x, --name, --name=value
// (a name of ASCII letters, digits and dashes that starts with a letter;
// a value of one line). Not a regexp: compiling one at init cost every
// hm-send start a tenth of a millisecond (#36).
func flagLike(a string) bool {
	s, ok := strings.CutPrefix(a, "-")
	if !ok {
		return false
	}
	name, value, _ := strings.Cut(strings.TrimPrefix(s, "-"), "=")
	if name == "" || !asciiLetter(name[0]) || strings.Contains(value, "\n") {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !asciiLetter(c) && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func asciiLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// ParseArgs parses fs's flags wherever they appear among args (so
// `hm send builder hello --json` works) and returns the positionals. Only
// known flags are taken; "--" ends flag parsing.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !flagLike(a) {
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
		case IsBoolFlag(f):
			value = "true"
		default:
			i++
			value = flags[i]
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s %q: %s", FlagName(name), value, wants(f, err))
		}
	}
	return nil
}

// IsBoolFlag reports whether f is a flag without a value (--json).
func IsBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// FlagName is how help shows a flag: -f for one letter, else --name.
func FlagName(name string) string {
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
		hint = "; did you mean " + FlagName(s) + "?"
	}
	return fmt.Errorf("unknown flag %s%s", arg, hint)
}

// The flags every command shares are defined here once, so that --root,
// --port and --json mean the same in each.

// RootFlag defines --root, the coordination root, on fs.
func RootFlag(fs *flag.FlagSet) *string {
	return fs.String("root", "", "coordination root (default: $SQUIDRUN_ROOT, nearest .squidrun/, or the working directory)")
}

// FindRoot finds the layout --root (the value of RootFlag) names.
func FindRoot(env Env, root string) (layout.Layout, error) {
	return layout.FindRoot(root, env.Getenv)
}

// PortFlag defines --port, the port of the hub to talk to, on fs. 0 finds
// it: $HM_PORT, $HM_SEND_PORT, hub.json, else 9900 (see Discover). `hm up`,
// which listens rather than connects, defines its own.
func PortFlag(fs *flag.FlagSet) *int {
	return fs.Int("port", 0, "hub port (default: $HM_PORT, the running hub's hub.json, or 9900)")
}

// JSONFlag defines --json on fs; what names what is printed as JSON.
func JSONFlag(fs *flag.FlagSet, what string) *bool {
	return fs.Bool("json", false, "print "+what+" as JSON")
}

// NewFlags is a command's flag set. It prints nothing itself: UsageError
// and PrintHelp say what there is to say.
func NewFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// UsageError answers a command's usage error err: one line saying what is
// wrong, the command's synopsis and where its help is, on stderr, exit 2.
// For -h/--help (flag.ErrHelp) it prints the command's help on stdout,
// exit 0: the synopsis, summary (what the command does, "" for nothing)
// and the flags.
func UsageError(env Env, fs *flag.FlagSet, synopsis, summary string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		if env.Describe != nil { // hm completion reads the flags
			env.Describe(fs)
			return ExitOK
		}
		PrintHelp(env.Stdout, fs, synopsis, summary)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "hm %s: %v\n", fs.Name(), err)
	}
	fmt.Fprintln(env.Stderr, "usage: "+synopsis)
	fmt.Fprintf(env.Stderr, "run 'hm help %s' for its flags\n", fs.Name())
	return ExitUsage
}

// PrintHelp prints a command's help: its synopsis, what it does (summary,
// when not ""), and its flags as they are typed (--name, -f).
func PrintHelp(w io.Writer, fs *flag.FlagSet, synopsis, summary string) {
	fmt.Fprintln(w, "usage: "+synopsis)
	if summary != "" {
		fmt.Fprintf(w, "\n%s\n", summary)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		left := FlagName(f.Name)
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
