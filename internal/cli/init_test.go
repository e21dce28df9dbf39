package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInit: `hm init` finds the root like every command (--root here,
// $SQUIDRUN_ROOT otherwise), its flags work, and its exit codes are 0 done,
// 1 refused (naming the file), 2 usage.
func TestInit(t *testing.T) {
	root := t.TempDir()
	env := func() (Env, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		return Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "SQUIDRUN_ROOT" {
				return root
			}
			return ""
		}}, &out, &errb
	}
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"init", "--agents", "cursor"}, ExitUsage, `unknown agent "cursor"`},
		{[]string{"init", "extra"}, ExitUsage, "takes no arguments"},
		{[]string{"init", "--dry-run", "--agents", "claude"}, ExitOK, "+++ b/CLAUDE.md"},
		{[]string{"init", "--agents", "claude"}, ExitOK, "created   CLAUDE.md: instructions block"},
		{[]string{"init", "--agents", "claude", "--root", root}, ExitOK, "already wired: nothing changed"},
		{[]string{"init", "--undo", "--agents", "claude"}, ExitOK, "removed  CLAUDE.md"},
	}
	for _, tc := range tests {
		e, out, errb := env()
		code := MainContext(context.Background(), tc.args, e)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
			t.Errorf("hm %v: exit %d (want %d)\n%s%s", tc.args, code, tc.code, out, errb)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".mcp.json"), []byte("{,}"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _, errb := env()
	if code := MainContext(context.Background(), []string{"init"}, e); code != ExitFailed || !strings.Contains(errb.String(), "hm init: .mcp.json:1:2: invalid character") {
		t.Errorf("unparseable .mcp.json: exit %d\n%s", code, errb)
	}
}

// TestInitWarnsHmNotOnPath: the wiring runs a bare `hm`, so hm init warns
// when no directory on PATH holds an executable hm (issue #34 item 11), and
// says nothing when one does; undo does not warn.
func TestInitWarnsHmNotOnPath(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "hm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := t.TempDir()
	if err := os.WriteFile(filepath.Join(notExec, "hm"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		args       []string
		warn       bool
	}{
		{"empty PATH", "", []string{"init", "--agents", "claude"}, true},
		{"hm not executable", notExec, []string{"init", "--agents", "claude"}, true},
		{"hm on PATH", notExec + string(os.PathListSeparator) + bin, []string{"init", "--agents", "claude"}, false},
		{"dry run warns too", "", []string{"init", "--dry-run", "--agents", "claude"}, true},
		{"undo does not warn", "", []string{"init", "--undo", "--agents", "claude"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var out, errb bytes.Buffer
			e := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
				switch k {
				case "SQUIDRUN_ROOT":
					return root
				case "PATH":
					return tc.path
				}
				return ""
			}}
			if code := MainContext(context.Background(), tc.args, e); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if got := strings.Contains(errb.String(), "hm is not on PATH"); got != tc.warn {
				t.Errorf("warning shown %v, want %v; stderr %q", got, tc.warn, errb.String())
			}
		})
	}
}
