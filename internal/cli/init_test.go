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
