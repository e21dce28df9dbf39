package agent

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// queryProgram is a Python program that switches its terminal to raw mode,
// writes one query and blocks until the answer's final bytes arrived, as a
// program that asks its terminal something and waits does; then it shows
// the answer (its printable part) and sleeps.
const queryProgram = `
import os, sys, tty
tty.setraw(0)
query, end = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
os.write(1, query)
got = b""
while not got.endswith(end):
    got += os.read(0, 1)
os.write(1, b"answered: " + got.replace(b"\x1b", b"^") + b"\r\n")
os.read(0, 1 << 16)
`

// TestMoreTerminalQueriesAnswered: queries a real terminal (xterm) answers
// and that a program may block on: mode reports for ANSI modes (DECRQM
// without "?"), the terminal's settings (DECRQSS) and its capabilities
// (XTGETTCAP). A pane that does not answer them leaves the program
// stalled forever.
func TestMoreTerminalQueriesAnswered(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for this test: %v", err)
	}
	dir := t.TempDir()
	prog := dir + "/query.py"
	if err := os.WriteFile(prog, []byte(queryProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, query, end, want string
	}{
		{"primary device attributes (answered before too)", "\x1b[c", "c", "^[?62;22c"},
		{"ANSI mode report, insert mode", "\x1b[4$p", "$y", "^[4;2$y"},
		{"ANSI mode report, unknown mode", "\x1b[99$p", "$y", "^[99;0$y"},
		{"settings: graphic rendition", "\x1bP$qm\x1b\\", "\x1b\\", "^P1$r0m^\\"},
		{"settings: scroll region", "\x1bP$qr\x1b\\", "\x1b\\", "^P1$r1;24r^\\"},
		{"settings: unknown", "\x1bP$qz\x1b\\", "\x1b\\", "^P0$r^\\"},
		{"capability: unknown", "\x1bP+q787878\x1b\\", "\x1b\\", "^P0+r787878^\\"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hex := func(s string) string { return fmt.Sprintf("%x", s) }
			p := startPane(t, Spec{
				Command: fmt.Sprintf("exec %s %s %s %s", shellQuote(py), shellQuote(prog), hex(tc.query), hex(tc.end)),
				Dir:     dir, Cols: 80, Rows: 24,
			})
			want := "answered: " + tc.want
			poll.For(t, 10*time.Second, func() error {
				return poll.Want(strings.Contains(p.Screen().Text(), want), "screen shows %q:\n%s", want, p.Screen().Text())
			})
		})
	}
}
