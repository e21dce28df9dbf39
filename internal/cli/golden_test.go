package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkGolden compares got with the golden file path, which -update
// rewrites first.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got %s\nwant %s", path, got, want)
	}
}

// session is what a person's terminal shows for one hm command: the
// command, its exit code, stdout and stderr, with the root and port the
// test chose shown as $ROOT and $PORT.
type session struct {
	root, port string
}

// run runs `hm args...` (in args, $ROOT and $PORT stand for the session's)
// with stdin and an empty environment, and returns what the person sees
// and the exit code.
func (s session) run(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strings.NewReplacer("$ROOT", s.root, "$PORT", s.port).Replace(a)
	}
	code, stdout, stderr := runHm(t, stdin, argv...)
	hide := func(s2 string) string {
		if s.root != "" {
			s2 = strings.ReplaceAll(s2, s.root, "$ROOT")
		}
		if s.port != "" {
			s2 = strings.ReplaceAll(s2, s.port, "$PORT")
		}
		return s2
	}
	var b strings.Builder
	b.WriteString(strings.Join(append([]string{"$ hm"}, args...), " ") + "\n")
	b.WriteString("exit " + strconv.Itoa(code) + "\n")
	b.WriteString("--- stdout\n" + hide(stdout))
	b.WriteString("--- stderr\n" + hide(stderr))
	return b.String(), code
}
