package cli

import (
	"bytes"
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
		{[]string{"comms", "--help"}, ExitOK, "usage: " + commsSynopsis, ""},
		{[]string{"comms", "-h"}, ExitOK, "usage: " + commsSynopsis, ""},
		{[]string{"comms"}, ExitUsage, "", "usage: " + commsSynopsis},
		{[]string{"journal", "--help"}, ExitOK, "usage: " + journalSynopsis, ""},
		{[]string{"journal", "-h"}, ExitOK, "usage: " + journalSynopsis, ""},
		{[]string{"journal"}, ExitUsage, "", "usage: " + journalSynopsis},
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
