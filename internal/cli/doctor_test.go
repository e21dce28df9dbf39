package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hm/roles"
)

// TestDoctorCommandLines: hm doctor checks each pane's command line with the
// hub's own rule (roles.CommandProblem) against the PATH it was given.
// Before, it looked up the first word without a VAR=value's rules, so hm
// up --demo's panes read `"while" not found on PATH`.
func TestDoctorCommandLines(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "agent-x"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command, path string
		want          string // the doctor line for the pane, as a regexp
	}{
		{roles.DemoCommand("architect"), bin, `(?m)^ok\s+command\s+architect: while `},
		{"FOO=1 exec agent-x --flag", bin, `(?m)^ok\s+command\s+architect: FOO=1 exec agent-x`},
		{"agent-x", "", `(?m)^warn\s+command\s+architect: command "agent-x" not found on PATH`},
		{"FOO=1 no-such-agent-hm", bin, `(?m)^warn\s+command\s+architect: command "no-such-agent-hm" not found on PATH`},
	}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			root := t.TempDir()
			cmd, _ := json.Marshal(tc.command)
			settings := `{"panes":[{"role":"architect","command":` + string(cmd) + `}]}`
			if err := os.MkdirAll(filepath.Join(root, ".squidrun"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, ".squidrun", "settings.json"), []byte(settings), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			e := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
				if k == "PATH" {
					return tc.path
				}
				return ""
			}}
			MainContext(context.Background(), []string{"doctor", "--root", root}, e)
			if !regexp.MustCompile(tc.want).MatchString(out.String()) {
				t.Errorf("hm doctor lacks %s:\n%s%s", tc.want, out.String(), errb.String())
			}
		})
	}
}
