package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// binDir holds the hm binary the end-to-end tests run as `hm mcp`, built
// on first use.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hm-mcp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Fails the run if a test left a goroutine behind.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

var build struct {
	once sync.Once
	err  error
}

// hmBinary builds hm (without the race detector: it is the program under
// test, run as a subprocess) once per run.
func hmBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		out, err := exec.Command("go", "build", "-o", binDir+"/", "hm/cmd/hm").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build hm: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return filepath.Join(binDir, "hm")
}

// testHub is a real hub, in this process, on a free port, without panes.
type testHub struct {
	*hub.Hub
	root string
}

func startHub(t testing.TB) *testHub {
	t.Helper()
	th, _ := startHubAt(t, t.TempDir())
	return th
}

// startHubAt starts a hub for root; stop stops it (also done at cleanup).
func startHubAt(t testing.TB, root string) (th *testHub, stop func()) {
	t.Helper()
	h, stop := hubtest.Start(t, root, hub.Options{NoPanes: true})
	return &testHub{Hub: h, root: root}, stop
}

// env is the environment of an `hm mcp` subprocess for root with extra
// variables: none of the caller's hm variables leak in.
func env(root string, extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HM_TOKEN", "HM_PORT", "HM_SEND_PORT", "SQUIDRUN_ROLE", "SQUIDRUN_ROOT", "SQUIDRUN_PANE_ID":
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "SQUIDRUN_ROOT="+root), extra...)
}

// connect runs `hm mcp args...` with environment env through the SDK's
// command transport and returns the client session, closed at cleanup.
// stderr collects what hm mcp printed there.
func connect(t testing.TB, env []string, args ...string) (*mcp.ClientSession, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(hmBinary(t), append([]string{"mcp"}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	c := mcp.NewClient(&mcp.Implementation{Name: "hm-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to hm mcp: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close hm mcp: %v (it should exit 0 when its stdin closes)\nstderr: %s", err, stderr.String())
		}
	})
	return cs, &stderr
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call calls a tool. It fails the test on a protocol error, not on a tool
// error (IsError), which the caller checks.
func call(t testing.TB, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// result calls a tool that must succeed and decodes its structured content.
func result[T any](t testing.TB, cs *mcp.ClientSession, tool string, args any) T {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", tool, args, text(res))
	}
	return decode[T](t, res)
}

func decode[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	raw, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
