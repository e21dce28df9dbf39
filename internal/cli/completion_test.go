package cli

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/cmdline"
)

// TestCompletionCoversTable: completion is made from the command table:
// every command and subcommand is offered after its parent, and every
// command's own flags (read from the flag set its --help prints) after it.
func TestCompletionCoversTable(t *testing.T) {
	t.Parallel()
	tree := completionTree(t.Context())
	byPath := map[string]completionNode{}
	for _, n := range tree {
		byPath[n.path] = n
	}
	offers := func(path, word string) bool {
		for _, w := range byPath[path].words {
			if w.word == word {
				return true
			}
		}
		return false
	}
	for _, p := range commandPaths() {
		parent, name := "", p
		if i := strings.LastIndex(p, " "); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		if !offers(parent, name) {
			t.Errorf("%q is not offered after %q", name, parent)
		}
		c, _, err := lookupPath(strings.Fields(p))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.subs) > 0 {
			continue
		}
		fs := commandFlags(t.Context(), c)
		if fs == nil {
			t.Errorf("hm %s --help describes no flag set: its help does not go through usageError", p)
			continue
		}
		for _, f := range flagNames(fs) {
			if !offers(p, f) {
				t.Errorf("hm %s: flag %s is not offered", p, f)
			}
		}
	}
}

// TestCompletionShells runs the scripts hm completion writes in real bash,
// zsh and fish, as each shell's completion would (issue #34 item 8: there
// was no completion): commands, subcommands, flags after the message of
// hm-send, bg's actions, file names after a flag that takes a value.
func TestCompletionShells(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line string // what is typed before TAB
		want []string
		not  []string
	}{
		{"hm sta", []string{"status"}, nil},
		{"hm comms ", []string{"history", "search", "tail"}, []string{"--json"}},
		{"hm comms history --", []string{"--last", "--session", "--json", "--root"}, []string{"--limit"}},
		{"hm-send builder hi --", []string{"--json", "--priority", "--no-fallback"}, []string{"--last"}},
		{"hm-bg ", []string{"spawn", "kill-all", "map", "--task"}, nil},
		{"hm help co", []string{"comms", "completion"}, nil},
		{"hm completion ", []string{"bash", "zsh", "fish"}, nil},
		{"hm comms history --root ", []string{"afile"}, []string{"--last"}},
		{"hm comms tail --root /x -", []string{"-f", "--last"}, nil},
	}
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			bin, err := exec.LookPath(shell)
			if err != nil {
				t.Fatalf("%s is not on PATH (make deps installs it): %v", shell, err)
			}
			code, script, _ := runHm(t, "", "completion", shell)
			if code != ExitOK {
				t.Fatalf("hm completion %s: exit %d", shell, code)
			}
			file := filepath.Join(t.TempDir(), "hm."+shell)
			if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, tt := range tests {
				got := completeIn(t, bin, shell, file, dir, tt.line)
				for _, w := range tt.want {
					if !slices.Contains(got, w) {
						t.Errorf("%s: %q offers %q, want %s among them", shell, tt.line, got, w)
					}
				}
				for _, w := range tt.not {
					if slices.Contains(got, w) {
						t.Errorf("%s: %q offers %q, which should not hold %s", shell, tt.line, got, w)
					}
				}
			}
		})
	}
}

// completeIn returns the words shell offers for line (typed up to the
// cursor) with script loaded, in dir: bash through _hm with COMP_WORDS,
// zsh through _hm with compadd and _files stubbed (zsh filters the words
// by what is typed itself), fish through complete -C.
func completeIn(t *testing.T, bin, shell, script, dir, line string) []string {
	t.Helper()
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	switch shell {
	case "bash":
		cmd = exec.CommandContext(ctx, bin, append([]string{"--norc", "--noprofile", "-c",
			`source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _hm; printf '%s\n' "${COMPREPLY[@]}"`, script}, words...)...)
	case "zsh":
		cmd = exec.CommandContext(ctx, bin, append([]string{"-f", "-c",
			`source "$0"; compadd() { shift; print -rl -- "$@"; }; _files() { print -rl -- *; }; words=("$@"); CURRENT=$#; _hm`, script}, words...)...)
	case "fish":
		cmd = exec.CommandContext(ctx, bin, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, line)
	}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s completing %q: %v\n%s", shell, line, err, out)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		w, _, _ := strings.Cut(l, "\t") // fish: word<TAB>description
		got = append(got, w)
	}
	return got
}

// flagNames is fs's flags as they are typed (--name, -f).
func flagNames(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, cmdline.FlagName(f.Name)) })
	return out
}
