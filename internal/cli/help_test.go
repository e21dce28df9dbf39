package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpOnStdout: help asked for, at any level, is printed on stdout and
// exits 0; a missing command or subcommand is a usage error on stderr
// (exit 2). Before the fix `hm --help` printed on stderr and `hm comms
// --help` and `hm journal --help` were usage errors.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--help"}, ExitOK, "usage: hm <command>", ""},
		{[]string{"-h"}, ExitOK, "usage: hm <command>", ""},
		{[]string{"help"}, ExitOK, "usage: hm <command>", ""},
		{[]string{}, ExitUsage, "", "usage: hm <command>"},
		{[]string{"comms", "--help"}, ExitOK, "usage: hm comms <subcommand>", ""},
		{[]string{"comms", "-h"}, ExitOK, "usage: hm comms <subcommand>", ""},
		{[]string{"comms"}, ExitUsage, "", "usage: hm comms <subcommand>"},
		{[]string{"journal", "--help"}, ExitOK, "usage: hm journal <subcommand>", ""},
		{[]string{"journal", "-h"}, ExitOK, "usage: hm journal <subcommand>", ""},
		{[]string{"journal"}, ExitUsage, "", "usage: hm journal <subcommand>"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			code := MainContext(t.Context(), tt.args, env)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) ||
				(tt.stdout != "" && errb.Len() > 0) || (tt.stderr != "" && out.Len() > 0) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
}

// commandPaths is every command path of the table ("send", "comms
// history"), parents before their subcommands.
func commandPaths() []string {
	var out []string
	var walk func(prefix string, cmds []command)
	walk = func(prefix string, cmds []command) {
		for _, c := range cmds {
			p := strings.TrimSpace(prefix + " " + c.name)
			out = append(out, p)
			walk(p, c.subs)
		}
	}
	walk("", commands())
	return out
}

// singleDashFlag finds a long flag written with one dash in help text.
var singleDashFlag = regexp.MustCompile(`(^|[\s\[|(])-[a-z][a-z-]+`)

// TestHelpEveryCommand: hm help <command> prints that command's help (its
// synopsis, what it does, its flags as --name) on stdout and exits 0, the
// same as hm <command> --help; issue #34 item 8: hm help send printed the
// general help, and help showed -json where the docs say --json. The
// golden files under testdata/help are what a person reads.
func TestHelpEveryCommand(t *testing.T) {
	t.Parallel()
	paths := append([]string{""}, commandPaths()...)
	for _, p := range paths {
		name := strings.ReplaceAll(p, " ", "-")
		if name == "" {
			name = "hm"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			words := strings.Fields(p)
			got, code := session{}.run(t, "", append([]string{"help"}, words...)...)
			if code != ExitOK {
				t.Fatalf("exit %d:\n%s", code, got)
			}
			if m := singleDashFlag.FindString(got); m != "" {
				t.Errorf("help shows %q, a long flag with one dash:\n%s", m, got)
			}
			checkGolden(t, filepath.Join("testdata", "help", name+".golden"), got)
			if p == "" {
				return
			}
			direct, _ := session{}.run(t, "", append(words, "--help")...)
			_, want, _ := strings.Cut(got, "\n")
			_, have, _ := strings.Cut(direct, "\n")
			if have != want {
				t.Errorf("hm %s --help differs from hm help %s:\n%s\nwant\n%s", p, p, have, want)
			}
		})
	}
}

// TestUsageErrors: a mistyped command, subcommand, flag or value gets one
// line saying what is wrong (with a suggestion when one is near), the
// synopsis and where the help is, on stderr, exit 2 (issue #34 item 8:
// hm stauts had no suggestion, --last abc printed Go's flag usage block).
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"no-command", nil},
		{"command-typo", []string{"stauts"}},
		{"subcommand-typo", []string{"comms", "histroy"}},
		{"no-subcommand", []string{"comms"}},
		{"help-typo", []string{"help", "stauts"}},
		{"help-subcommand-typo", []string{"help", "journal", "verfy"}},
		{"flag-typo", []string{"status", "--jsn"}},
		{"bad-number", []string{"comms", "history", "--last", "abc"}},
		{"bad-number-equals", []string{"comms", "history", "--last=abc"}},
		{"bad-duration", []string{"send", "--wait", "soon", "builder", "hi"}},
		{"missing-value", []string{"comms", "search", "--limit"}},
		{"missing-target", []string{"send"}},
		{"trailing-unknown-flag", []string{"send", "builder", "hi", "--jsno"}},
		{"bg-action-typo", []string{"bg", "spwan"}},
		{"completion-shell", []string{"completion", "tcsh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, code := session{}.run(t, "", tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if strings.Contains(got, "Usage of") || strings.Contains(got, "\t") {
				t.Errorf("Go's flag usage block:\n%s", got)
			}
			checkGolden(t, filepath.Join("testdata", "errors", tt.name+".golden"), got)
		})
	}
}
