package mcpserver_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/mcpserver"
)

// startHTTP runs `hm mcp --http` for root and returns its URL.
func startHTTP(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command(hmBinary(t), append([]string{"mcp", "--http"}, args...)...)
	cmd.Env = env(root)
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(interruptSignal)
		if err := cmd.Wait(); err != nil {
			t.Errorf("hm mcp --http: %v\nstderr: %s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("hm mcp --http printed no URL: %v\nstderr: %s", err, stderr.String())
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("URL %q", url)
	}
	return url
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "hm-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
}

// TestHTTP: `hm mcp --http` serves the tools over Streamable HTTP to a
// client with a token the hub accepts, acting as the token's role, and
// refuses clients without one, with a wrong one, or from a browser.
func TestHTTP(t *testing.T) {
	h := startHub(t)
	url := startHTTP(t, h.root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cs, err := connectHTTP(ctx, url, h.Tokens.Issue("architect"))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	if st := result[proto.StatusResult](t, cs, mcpserver.ToolStatus, map[string]any{}); st.Role != "architect" {
		t.Errorf("acting as %q, want architect (the token's role)", st.Role)
	}
	// The operator token acts as user.
	op, err := connectHTTP(ctx, url, readToken(t, h.root))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if st := result[proto.StatusResult](t, op, mcpserver.ToolStatus, map[string]any{}); st.Role != "user" {
		t.Errorf("operator acting as %q, want user", st.Role)
	}

	if _, err := connectHTTP(ctx, url, "wrong"); err == nil {
		t.Error("a wrong token connected")
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"browser", map[string]string{"Authorization": "Bearer " + h.Tokens.Issue("builder"), "Origin": "http://evil.example"}, http.StatusForbidden},
		{"rebinding", map[string]string{"Authorization": "Bearer " + h.Tokens.Issue("builder"), "Host": "evil.example"}, http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}

	// A request from another machine is refused before anything else.
	hh := mcpserver.NewHTTPHandler(mcpserver.HTTPConfig{Dial: nil})
	defer hh.Close()
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(init))
	req.RemoteAddr = "192.0.2.7:5555"
	req.Header.Set("Authorization", "Bearer x")
	rec := httptest.NewRecorder()
	hh.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("non-loopback client: HTTP %d, want 403", rec.Code)
	}

	// Only a loopback address is served.
	out, err := exec.Command(hmBinary(t), "mcp", "--http", "--listen", "0.0.0.0:0").CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "only a loopback address") {
		t.Errorf("--listen 0.0.0.0:0: exit %d, %s", code, out)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

var interruptSignal = os.Interrupt

func readToken(t *testing.T, root string) string {
	t.Helper()
	tok, err := layout.Layout{Root: root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
