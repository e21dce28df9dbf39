package sendcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hm/internal/cmdline"
	"hm/internal/layout"
	"hm/internal/testutil"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMainIsHmSend: Main is the program hm-send on its own — its version
// line under its name, its help, a usage error, and with the hub down the
// offline target check and the trigger-file fallback — with nothing of
// internal/cli behind it.
func TestMainIsHmSend(t *testing.T) {
	t.Parallel()
	down := testutil.ClosedPort(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		file   string // the trigger file written, "" for none
	}{
		{name: "version", args: []string{"--version"}, code: cmdline.ExitOK, stdout: "hm-send "},
		{name: "help", args: []string{"--help"}, code: cmdline.ExitOK, stdout: "usage: " + Synopsis + "\n\n" + Summary + "\n"},
		{name: "no target", args: nil, code: cmdline.ExitUsage, stderr: "hm send: missing target"},
		{name: "typo while down", args: []string{"--port", down, "architekt", "hi"}, code: cmdline.ExitFailed,
			stderr: `hm-send: refused: invalid_target: "architekt" is not a target; did you mean architect?`},
		{name: "no fallback", args: []string{"--port", down, "--no-fallback", "architect", "hi"}, code: cmdline.ExitFailed,
			stderr: "no hub is running on 127.0.0.1:" + down},
		{name: "fallback", args: []string{"--port", down, "--message-id", "m-1", "architect", "-5", "degrees"}, code: cmdline.ExitOK,
			stderr: "fallback.triggered", file: "architect.m-1.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var out, errb bytes.Buffer
			env := cmdline.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(k string) string { return map[string]string{"SQUIDRUN_ROOT": root}[k] }}
			code := Main(tt.args, env)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("hm-send %q: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)",
					tt.args, code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
			files, _ := filepath.Glob(filepath.Join(layout.Layout{Root: root}.Triggers(), "*.txt"))
			if tt.file == "" {
				if len(files) != 0 {
					t.Fatalf("wrote %v", files)
				}
				return
			}
			if len(files) != 1 || filepath.Base(files[0]) != tt.file {
				t.Fatalf("trigger files %v, want %s", files, tt.file)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil || !strings.Contains(string(raw), "-5 degrees") {
				t.Fatalf("trigger file %q (%v): want the text -5 degrees", raw, err)
			}
		})
	}
}
