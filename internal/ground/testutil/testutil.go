// Package testutil holds the helpers that the tests of several packages
// share: a logger writing to the test's output, a test context, whether the
// race detector is on, and the fake agent CLI built once per test binary.
// It imports nothing of hm.
package testutil

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Logger logs at level and above to t's output.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// ContextTimeout bounds a test's context. It is generous on purpose: a test
// waits for a condition rather than asserting speed, and on a slow, loaded
// machine the condition can take long; the bound only ends a test that
// would otherwise hang until the go test timeout.
const ContextTimeout = 3 * time.Minute

// Context returns a context cancelled at t's cleanup or after
// ContextTimeout. It does not derive from t.Context, which ends before the
// cleanups run: cleanups that close with it keep a live context.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ContextTimeout)
	t.Cleanup(cancel)
	return ctx
}

// LineReaderCommand is a /bin/sh command line running a program that reads
// its terminal in canonical mode (bash's read builtin without -e leaves the
// terminal cooked), prints "> " before each line and appends each line it
// reads to out, after the wall-clock time it read it at ($EPOCHREALTIME,
// seconds with microseconds).
func LineReaderCommand(out string) string {
	return fmt.Sprintf(`exec bash --norc --noprofile -c 'printf "> "; while IFS= read -r l; do printf "%%s %%s\n" "$EPOCHREALTIME" "$l" >> "$0"; printf "> "; done' %s`,
		"'"+strings.ReplaceAll(out, "'", `'\''`)+"'")
}

// PromptToolkitPython returns a Python interpreter that has the
// prompt_toolkit module (python3 on PATH, else Debian's /usr/bin/python3,
// where `make deps` installs python3-prompt-toolkit); the test fails with
// what to install when none has it.
func PromptToolkitPython(t testing.TB) string {
	t.Helper()
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			tried = append(tried, py+": not found")
			continue
		}
		out, err := exec.Command(path, "-c", "import prompt_toolkit").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", path, err, strings.TrimSpace(string(out))))
	}
	t.Fatalf("no python3 with prompt_toolkit (run make deps, which installs Debian's python3-prompt-toolkit): %s", strings.Join(tried, "; "))
	return ""
}

// ClosedPort is a loopback port nothing listens on, as a string for
// --port: a socket bound to it and never listening holds it until t ends,
// so a connection there is refused and no other test's listener (port 0,
// in parallel) can be given it meanwhile — a closed port handed out again
// let a "hub down" test reach another test's hub.
func ClosedPort(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}
