package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// cookedPrograms read their input a line at a time with the terminal in
// canonical (cooked) mode, where the kernel keeps at most canonLineMax
// bytes of a line and throws the rest away, while its echo still shows
// every byte typed. Each logs every line it reads as a JSON string.
var cookedPrograms = []struct{ name, bin, script string }{
	{"python stdin.readline", "python3", `
import json, os, sys
log = open(os.environ["LOG"], "a")
while True:
    sys.stdout.write("cooked> "); sys.stdout.flush()
    s = sys.stdin.readline()
    if not s: break
    log.write(json.dumps(s.rstrip("\n")) + "\n"); log.flush()
`},
	{"sh read", "sh", `
while printf 'cooked> ' && IFS= read -r line; do
  printf '%s\n' "$line" | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().rstrip("\n")))' >> "$LOG"
done
`},
}

// TestCookedLongLineNotCut: a line longer than the terminal's canonical
// line limit is never typed into a program reading in cooked mode: the
// program would get it cut (the trailer and the end of the body gone)
// while the echo on the screen shows it whole, so hm would report it
// submitted. Such a body goes to its pointer file, as a multi-line one.
func TestCookedLongLineNotCut(t *testing.T) {
	t.Parallel()
	for _, prog := range cookedPrograms {
		t.Run(prog.name, func(t *testing.T) {
			t.Parallel()
			bin, err := exec.LookPath(prog.bin)
			if err != nil {
				t.Fatalf("%s is needed for this test: %v", prog.bin, err)
			}
			dir := t.TempDir()
			script := filepath.Join(dir, "prog")
			if err := os.WriteFile(script, []byte(prog.script), 0o600); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(dir, "lines.jsonl")
			p := startPane(t, Spec{
				Command:    "exec " + shellQuote(bin) + " " + shellQuote(script),
				Profile:    ProfileDefault,
				Timing:     Profile{Idle: 100 * time.Millisecond},
				Dir:        dir,
				Env:        []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TERM=xterm-256color", "LOG=" + logPath},
				PointerDir: filepath.Join(dir, "ptr"),
			})
			stages := newStageLog()
			contents := []string{
				"(ARCH #1): short",
				"(ARCH #2): " + strings.Repeat("abcdefghi ", 408), // under MaxInlineBody, over the line limit typed
				"(ARCH #3): " + strings.Repeat("é", canonLineMax/2-20),
				"(ARCH #4): after",
			}
			for i, c := range contents {
				id := fmt.Sprintf("ck-%d", i+1)
				p.Enqueue(Delivery{MessageID: id, Content: c, Report: stages.reporter(id)})
			}
			last := fmt.Sprintf("ck-%d", len(contents))
			poll.For(t, 60*time.Second, func() error { return poll.Want(stages.final(last), "every message final") })
			lines := readLogLines(t, logPath)
			if len(lines) != len(contents) {
				t.Fatalf("the program read %d lines, want %d: %q", len(lines), len(contents), lines)
			}
			for i, c := range contents {
				id := fmt.Sprintf("ck-%d", i+1)
				got := lines[i]
				if !strings.HasSuffix(got, Trailer(id)) {
					t.Errorf("%s: the program read a line without its trailer (%d bytes, ends %q); stages %v", id, len(got), got[max(0, len(got)-40):], stages.get(id))
					continue
				}
				st := stages.get(id)
				if len(st) == 0 {
					t.Fatalf("%s: no stages", id)
				}
				if st[0].Pointer == "" && got != AgentPrefix+c+" "+Trailer(id) {
					t.Errorf("%s: typed inline but read %q", id, got)
				}
				if st[0].Pointer != "" {
					if b, err := os.ReadFile(st[0].Pointer); err != nil || string(b) != c {
						t.Errorf("%s: pointer file %s: %v", id, st[0].Pointer, err)
					}
				}
			}
		})
	}
}

// readLogLines reads a file of JSON strings, one a line (missing: none).
func readLogLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	return out
}
