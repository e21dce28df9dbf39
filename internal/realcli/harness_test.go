package realcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
)

// The harness: a real hub (`hm up`, the built binary) hosting one real
// CLI in a pane, as role builder; the test is architect, a WebSocket
// client of that hub.

// env is the environment of the processes the suite starts: the test's
// own without hm's variables, with the built hm binaries first on PATH.
func env(t testing.TB, root string, extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HM_") || strings.HasPrefix(k, "SQUIDRUN_") || k == "PATH" || strings.HasPrefix(k, "TELEGRAM_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "PATH="+binDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"), "SQUIDRUN_ROOT="+root)
	return append(out, extra...)
}

// hub is a running `hm up`.
type hub struct {
	root string
	port int
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// writeTeam writes root's settings.json: architect (WebSocket, the test)
// and builder (the CLI's pane). Launch wiring follows hooks.
func writeTeam(t testing.TB, root, command, profile string, hooks bool) {
	t.Helper()
	team := map[string]any{
		"launchWiring": hooks,
		"panes": []map[string]string{
			{"role": "architect", "transport": "ws"},
			{"role": "builder", "command": command, "profile": profile},
		},
	}
	writeJSON(t, layout.Layout{Root: root}.Settings(), team)
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startHub runs `hm up --port 0` in root and waits until it serves; it is
// stopped (SIGTERM, then SIGKILL of its process group) at cleanup. The hub
// logs at debug level (`hm up -v`), so that a failure's evidence (hubLog)
// and dump say how each message was typed: a failure seen once under load
// may not come back on demand.
func startHub(t testing.TB, root string) *hub {
	t.Helper()
	lay := layout.Layout{Root: root}
	cmd := exec.Command(hmBin(t, "hm"), "up", "--port", "0", "-v")
	cmd.Env, cmd.Dir = env(t, root), root
	h := &hub{root: root, cmd: cmd, log: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(h.done) }()
	t.Cleanup(h.stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := lay.ReadHubInfo()
		if err == nil && info.PID == cmd.Process.Pid && info.Port > 0 {
			h.port = info.Port
			return h
		}
		select {
		case <-h.done:
			t.Fatalf("hm up exited early:\n%s", h.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hm up did not start: %v\n%s", err, h.log)
		}
	}
}

func (h *hub) stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.done
	}
}

// kill ends the hub at once, as a crash does: SIGKILL to its process
// group (the pane host is not in it), then waits for it to be gone.
func (h *hub) kill(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the hub's process group %d: %v", h.cmd.Process.Pid, err)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the hub %d outlived SIGKILL for 30 s", h.cmd.Process.Pid)
	}
}

func (h *hub) url() string { return fmt.Sprintf("ws://127.0.0.1:%d/", h.port) }

// hubLog is the tail of the hub's log file.
func (h *hub) hubLog() string {
	b, _ := os.ReadFile(layout.Layout{Root: h.root}.HubLog())
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		// The ledger's debug lines (a checkpoint every few commits) say
		// nothing of the pane and would push its lines out of the tail.
		if !strings.Contains(line, `"level":"DEBUG"`) || !strings.Contains(line, `"component":"journal"`) {
			keep = append(keep, line)
		}
	}
	out := strings.Join(keep, "\n")
	if len(out) > hubLogTail {
		out = out[len(out)-hubLogTail:]
	}
	return out
}

// hubLogTail is how much of the hub's log a failure shows.
const hubLogTail = 10000

// dial registers a client as role with the operator token.
func (h *hub) dial(ctx context.Context, t testing.TB, role string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, h.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	tok, err := layout.Layout{Root: h.root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, role, tok, false); err != nil {
		t.Fatal(err)
	}
	return c
}

// paneStatus is builder's pane in GET /status.
type paneStatus struct {
	Role     string `json:"role"`
	PID      int    `json:"pid"`
	State    string `json:"state"`
	Queued   int    `json:"queued"`
	Restarts int    `json:"restarts"`
	Adopted  bool   `json:"adopted"`
	Origin   string `json:"origin"`
}

func (h *hub) pane(ctx context.Context) (paneStatus, error) {
	tok, err := layout.Layout{Root: h.root}.ReadToken()
	if err != nil {
		return paneStatus{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/status", h.port), nil)
	if err != nil {
		return paneStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return paneStatus{}, err
	}
	defer resp.Body.Close()
	var st struct {
		Panes []paneStatus `json:"panes"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return paneStatus{}, fmt.Errorf("GET /status: %s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return paneStatus{}, err
	}
	for _, p := range st.Panes {
		if p.Role == "builder" {
			return p, nil
		}
	}
	return paneStatus{}, fmt.Errorf("no builder pane in /status")
}

// query runs a query frame on c.
func query(ctx context.Context, c *client.Client, op string, payload, out any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	var resp struct {
		OK     bool            `json:"ok"`
		Error  string          `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	f := proto.Frame{Type: proto.TypeQuery, Op: op, Payload: raw, RequestID: fmt.Sprintf("q-%d", time.Now().UnixNano())}
	if err := c.Request(ctx, f, proto.TypeResponse, &resp); err != nil {
		return err
	}
	if len(resp.Result) == 0 {
		return fmt.Errorf("%s query: %s", op, resp.Error)
	}
	return json.Unmarshal(resp.Result, out)
}

// runHM runs the hm binary in root and fails t unless it exits 0.
func runHM(t testing.TB, root string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hmBin(t, "hm"), args...)
	cmd.Env, cmd.Dir = env(t, root), root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
