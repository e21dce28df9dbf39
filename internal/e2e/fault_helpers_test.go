package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/promptlog"
	"hm/journal"
)

// Helpers shared by the fault suite (fault_test.go) and the security suite
// (security_test.go).

// agentCommand is a settings.json command line that runs the fake agent,
// logging its submitted prompts to <root>/<name>.jsonl. "exec env" keeps the
// pane's pid the agent's own, so that a test can kill exactly the agent.
func agentCommand(root, name string, env ...string) string {
	parts := []string{"exec", "env", "FAKEAGENT_LOG=" + filepath.Join(root, name+".jsonl"), "FAKEAGENT_ENTER_MS=60"}
	parts = append(parts, env...)
	return strings.Join(append(parts, fakeAgentBin()), " ")
}

// writeSettings writes .squidrun/settings.json under root.
func writeSettings(t testing.TB, root, settings string) {
	t.Helper()
	lay := layout.Layout{Root: root}
	if err := os.MkdirAll(lay.State(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.Settings(), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
}

// exited reports whether the hub process has ended.
func exited(h *hubProc) bool {
	select {
	case err := <-h.done:
		h.done <- err
		return true
	default:
		return false
	}
}

// hubLog returns the hub's log file (runtime/hub.log), for failure messages.
func hubLog(root string) string {
	data, _ := os.ReadFile(layout.Layout{Root: root}.HubLog())
	if len(data) > 16<<10 {
		data = data[len(data)-16<<10:]
	}
	return string(data)
}

// tctx is a context that ends with the test or after d.
func tctx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// prompt is one line of the fake agent's prompt log.
type prompt = promptlog.Prompt

// readPrompts reads a fake agent prompt log; a missing file is empty.
func readPrompts(t *testing.T, path string) []prompt {
	t.Helper()
	out, err := promptlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// trailerCounts counts "[hm:<id>]" trailers per message id in prompts.
func trailerCounts(ps []prompt) map[string]int {
	n := map[string]int{}
	for _, p := range ps {
		s := p.Prompt
		for {
			i := strings.Index(s, "[hm:")
			if i < 0 {
				break
			}
			s = s[i+4:]
			j := strings.IndexByte(s, ']')
			if j < 0 {
				break
			}
			n[s[:j]]++
			s = s[j+1:]
		}
	}
	return n
}

// statusView is the part of `hm status --json` (GET /status) the suites read.
type statusView struct {
	Hub struct {
		PID     int    `json:"pid"`
		Port    int    `json:"port"`
		Session int    `json:"session"`
		Version string `json:"version"`
	} `json:"hub"`
	Panes []struct {
		Role     string `json:"role"`
		PID      int    `json:"pid"`
		State    string `json:"state"`
		Queued   int    `json:"queued"`
		Restarts int    `json:"restarts"`
		Adopted  bool   `json:"adopted"`
		Origin   string `json:"origin"`
	} `json:"panes"`
	Listeners []string `json:"listeners"`
	Clients   int      `json:"clients"`
	Telegram  struct {
		State    string `json:"state"`
		Inbound  int64  `json:"inbound"`
		Refused  int64  `json:"refused"`
		Outbound int64  `json:"outbound"`
	} `json:"telegram"`
}

// paneStatus finds role among the status's panes.
func (s statusView) pane(role string) (pid int, state string, queued int, ok bool) {
	for _, p := range s.Panes {
		if p.Role == role {
			return p.PID, p.State, p.Queued, true
		}
	}
	return 0, "", 0, false
}

// fetchStatus reads GET /status with the operator token.
func fetchStatus(t *testing.T, h *hubProc) (statusView, error) {
	t.Helper()
	var st statusView
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/status", h.port), nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+operator(t, h.root))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return st, fmt.Errorf("status %s: %s", resp.Status, b)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// cliStatus runs `hm status --json`.
func cliStatus(t *testing.T, root string) statusView {
	t.Helper()
	r := run(t, root, nil, "hm", "status", "--json")
	var st statusView
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		t.Fatalf("hm status --json: %+v", r)
	}
	return st
}

// dial connects to the hub without registering.
func dial(t *testing.T, h *hubProc) *client.Client {
	t.Helper()
	c, err := client.Dial(tctx(t, 10*time.Second), h.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// dialAs connects and registers as role with the operator token.
func dialAs(t *testing.T, h *hubProc, role string, listen bool) *client.Client {
	t.Helper()
	c, err := tryDialAs(t, h, role, listen)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDialAs is dialAs for a hub that may have died (a fault cycle): it
// returns the error instead of failing the test.
func tryDialAs(t *testing.T, h *hubProc, role string, listen bool) (*client.Client, error) {
	t.Helper()
	c, err := client.Dial(tctx(t, 10*time.Second), h.url())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.CloseNow() })
	if _, err := c.Register(tctx(t, 10*time.Second), role, operator(t, h.root), listen); err != nil {
		return nil, fmt.Errorf("register %s: %w", role, err)
	}
	return c, nil
}

// withLedger opens the ledger read-only, runs fn and closes it.
func withLedger(t *testing.T, root string, fn func(l *journal.Ledger)) {
	t.Helper()
	l, err := journal.Open(context.Background(), layout.Layout{Root: root}.Ledger(), journal.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	defer l.Close()
	fn(l)
}

// idSet is a concurrency-safe multiset of message ids.
type idSet struct {
	mu sync.Mutex
	n  map[string]int
}

func newIDSet() *idSet { return &idSet{n: map[string]int{}} }

func (s *idSet) add(id string) {
	s.mu.Lock()
	s.n[id]++
	s.mu.Unlock()
}

func (s *idSet) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

func (s *idSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.n)
}

func (s *idSet) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.n))
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

// paneWatcher follows a pane's output through /attach/<pane>?mode=view and
// counts occurrences of a marker in it.
type paneWatcher struct {
	marker string
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed after the replay frame

	mu    sync.Mutex
	count int
	carry []byte
}

// watchPane attaches to pane read-only with the operator token.
func watchPane(t *testing.T, h *hubProc, pane, marker string) *paneWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hdr := http.Header{"Authorization": {"Bearer " + operator(t, h.root)}}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, fmt.Sprintf("ws://127.0.0.1:%d/attach/%s?mode=view", h.port, pane), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		cancel()
		t.Fatalf("attach %s: %v", pane, err)
	}
	ws.SetReadLimit(4 << 20)
	w := &paneWatcher{marker: marker, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer ws.CloseNow()
		first := true
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				if first {
					close(w.ready)
				}
				return
			}
			w.feed(data)
			if first {
				first = false
				close(w.ready)
			}
		}
	}()
	t.Cleanup(w.stop)
	<-w.ready
	return w
}

func (w *paneWatcher) feed(data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.carry, data...)
	w.count += strings.Count(string(buf), w.marker)
	// Keep a tail that may hold the start of a marker split across frames,
	// but never a whole marker (it was counted).
	keep := len(w.marker) - 1
	if keep > len(buf) {
		keep = len(buf)
	}
	w.carry = append([]byte(nil), buf[len(buf)-keep:]...)
}

// n returns how many markers were seen so far.
func (w *paneWatcher) n() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// stop ends the watcher and waits for its goroutine.
func (w *paneWatcher) stop() {
	w.cancel()
	<-w.done
}

// mountTmpfs mounts a tmpfs of the given size (e.g. "8m") on dir, failing
// the test when mounting is not possible (not root, no CAP_SYS_ADMIN). The
// cleanup unmounts it; register it before anything that keeps files open
// there so that it runs after them.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot mount a tmpfs to simulate a full disk: the fault suite needs root (CAP_SYS_ADMIN) and mount(8), as in CI; run it as root (e.g. sudo go test ./internal/e2e -run TestFault): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s; detaching lazily", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
}

// fillDisk writes path until the file system is full and returns the bytes
// written.
func fillDisk(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for size := len(chunk); size > 0; {
		w, err := f.Write(chunk[:size])
		n += int64(w)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			size /= 2 // the last bytes that still fit
		}
	}
	return n
}

// waitN waits until n markers were seen, polling every millisecond so that
// the caller can act within a pane's Enter delay; false after d.
func (w *paneWatcher) waitN(n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for w.n() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
