package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"hm/internal/ground/testutil"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test left a goroutine behind, then removes
// the fake agent built for the hook tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testutil.RemoveBuilds()
		os.Exit(code)
	}))
}

// cliOnHub runs hm commands against the hub at port for root, with an
// empty environment: run(cmd, args...) runs `hm cmd --root root --port
// port args...` and returns its exit code, stdout and stderr.
func cliOnHub(t *testing.T, root, port string) (run func(cmd string, args ...string) (int, string, string)) {
	return func(cmd string, args ...string) (int, string, string) {
		return runHm(t, "", append([]string{cmd, "--root", root, "--port", port}, args...)...)
	}
}

// runHm runs `hm args...` with stdin and an empty environment, and
// returns its exit code, stdout and stderr.
func runHm(t *testing.T, stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := MainContext(t.Context(), args, env)
	return code, out.String(), errb.String()
}
