package cli

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"hm/internal/ground/buildinfo"
)

// TestMCPServes: hm mcp answers on stdout what it reads on stdin and exits
// 0 when stdin ends. No hub is needed to list the tools. Its
// implementation info carries the version hm --version prints (issue #34
// item 5: it said 0.1.0 whatever the build).
func TestMCPServes(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		env := Env{Stdin: inR, Stdout: outW, Stderr: &errb, Getenv: func(string) string { return "" }}
		done <- MainContext(t.Context(), []string{"mcp", "--role", "builder", "--root", t.TempDir()}, env)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	for _, tc := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, `you act as role builder`},
		{``, `"version":"` + buildinfo.Version() + `"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `"name":"hm_send"`},
	} {
		if tc.send == "" { // another check of the last answer
			if !strings.Contains(lines.Text(), tc.want) {
				t.Fatalf("answer %q lacks %q", lines.Text(), tc.want)
			}
			continue
		}
		if _, err := io.WriteString(inW, tc.send+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() || !strings.Contains(lines.Text(), tc.want) {
			t.Fatalf("answer to %s: %q lacks %q (%v)", tc.send, lines.Text(), tc.want, lines.Err())
		}
	}
	go io.Copy(io.Discard, outR) // whatever else it writes until it exits
	inW.Close()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d after stdin ended: %s", code, errb.String())
	}
}

func TestMCPCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		code       int
		stdout     []string // each must appear
		stderrWant string
	}{
		{name: "no arguments", args: []string{"mcp", "extra"}, code: ExitUsage, stderrWant: "usage: " + mcpSynopsis},
		{name: "unknown flag", args: []string{"mcp", "--bogus"}, code: ExitUsage, stderrWant: "unknown flag --bogus"},
		{name: "help", args: []string{"mcp", "-h"}, code: ExitOK, stdout: []string{"usage: " + mcpSynopsis, "-role"}},
		{name: "bad port variable", args: []string{"mcp"}, env: map[string]string{"HM_PORT": "nine"}, code: ExitFailed, stderrWant: `$HM_PORT="nine" is not a port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return tt.env[k] }}
			args := append(append([]string(nil), tt.args...), "--root", t.TempDir())
			if code := MainContext(t.Context(), args, env); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, out.String(), errb.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(errb.String(), tt.stderrWant) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrWant, errb.String())
			}
		})
	}
}
