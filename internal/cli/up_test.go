package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestUpRefusesBadPort: `hm up --port N` with N outside 0..65535 is a
// usage error (exit 2) naming --port; it never starts a hub on another
// port. (Before, a negative --port quietly meant "the settings port".)
func TestUpRefusesBadPort(t *testing.T) {
	t.Parallel()
	for _, port := range []string{"-1", "-5", "65536", "70000"} {
		t.Run(port, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var out, errb bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			code := MainContext(ctx, []string{"up", "--root", root, "--no-panes", "--port", port}, env)
			if code != ExitUsage || !strings.Contains(errb.String(), "--port") || strings.Contains(errb.String(), "hub listening") {
				t.Fatalf("hm up --port %s: exit %d (want %d)\n%s%s", port, code, ExitUsage, out.String(), errb.String())
			}
		})
	}
}
