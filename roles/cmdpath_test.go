package roles

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCommandProblem: the one "is the program on PATH" check (hub, hm
// doctor, hm init) looks past the shell words that run the next one and
// NAME=value prefixes, leaves compound commands to sh, and finds only an
// executable regular file in PATH's directories.
func TestCommandProblem(t *testing.T) {
	bin, other := t.TempDir(), t.TempDir()
	for dir, files := range map[string]map[string]os.FileMode{
		bin:   {"prog": 0o755},
		other: {"prog-noexec": 0o644},
	} {
		for name, mode := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(other, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := other + string(os.PathListSeparator) + bin
	for _, tc := range []struct {
		command string
		want    string
	}{
		{"prog", ""},
		{"FOO=1 prog -c true", ""},
		{"exec env FOO=1 prog", `command "env" not found on PATH`}, // env is looked up like any program
		{"command prog", ""},
		{"nohup time prog", ""},
		{DemoCommand("architect"), ""}, // hm up --demo's panes
		{"for f in a; do prog; done", ""},
		{"exec", "empty command"},
		{"", "empty command"},
		{"no-such-program-hm-test --flag", `command "no-such-program-hm-test" not found on PATH`},
		{"exec no-such-program-hm-test", `command "no-such-program-hm-test" not found on PATH`},
		{"prog-noexec", `command "prog-noexec" not found on PATH`},
		{"adir", `command "adir" not found on PATH`},
		{filepath.Join(bin, "prog") + " --x", ""},
		{filepath.Join(other, "prog-noexec"), `command "` + filepath.Join(other, "prog-noexec") + `" not found on PATH`},
	} {
		if got := CommandProblem(tc.command, path); got != tc.want {
			t.Errorf("CommandProblem(%q) = %q, want %q", tc.command, got, tc.want)
		}
	}
	if CommandProblem("prog", "") == "" {
		t.Error("an empty PATH finds prog")
	}
}
