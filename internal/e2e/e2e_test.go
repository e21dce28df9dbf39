// Package e2e tests the built binaries as subprocesses: hm up, hm-send,
// hm-bg, and what survives a kill -9 of the hub.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hm/agent"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/testutil"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hm-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir // the binaries are built on first use, see hmBinary
	// Fails the run if a test left a goroutine behind.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		testutil.RemoveBuilds()
		os.Exit(code)
	}))
}

// hubProc is a running `hm up` subprocess.
type hubProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	root string
	port int
	log  *bytes.Buffer
	done chan error
}

func cleanEnv(root string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HM_TOKEN", "HM_PORT", "HM_SEND_PORT", "SQUIDRUN_ROLE", "SQUIDRUN_ROOT", "SQUIDRUN_PANE_ID", "TELEGRAM_BOT_TOKEN", "TELEGRAM_CHAT_ID":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SQUIDRUN_ROOT="+root, "SHELL=/bin/sh")
	return append(env, extra...)
}

// startHub runs `hm up --port 0 args...` in root and waits for hub.json.
func startHub(t *testing.T, root string, args ...string) *hubProc {
	t.Helper()
	return startHubTB(t, root, args...)
}

func startHubTB(t testing.TB, root string, args ...string) *hubProc {
	t.Helper()
	return startHubEnv(t, root, nil, args...)
}

// startHubEnv is startHub with extra environment variables for the hub.
func startHubEnv(t testing.TB, root string, extra []string, args ...string) *hubProc {
	t.Helper()
	_ = os.Remove(layout.Layout{Root: root}.HubJSON())
	return startHubAs(t, root, "up", extra, args...)
}

// startHubAs runs `hm <sub> --port 0 args...` (hm up, hm restart) in root
// and waits for a hub.json of its own.
func startHubAs(t testing.TB, root, sub string, extra []string, args ...string) *hubProc {
	t.Helper()
	bin, env := hmBinary(t, "hm")
	return startHubBin(t, bin, root, sub, append(env, extra...), args...)
}

// startHubBin is startHubAs with the hm binary bin (another build, say)
// and env added to cleanEnv's.
func startHubBin(t testing.TB, bin, root, sub string, env []string, args ...string) *hubProc {
	t.Helper()
	lay := layout.Layout{Root: root}
	cmd := exec.Command(bin, append([]string{sub, "--port", "0"}, args...)...)
	cmd.Env = cleanEnv(root, env...)
	cmd.Dir = root
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hubProc{t: t, cmd: cmd, root: root, log: &logBuf, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := lay.ReadHubInfo()
		if err == nil && info.PID == cmd.Process.Pid && info.Port > 0 {
			h.port = info.Port
			break
		}
		select {
		case err := <-h.done:
			t.Fatalf("hub exited early: %v\n%s", err, logBuf.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub did not start:\n%s", logBuf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		h.kill()
		endKeepers(t, root)
	})
	return h
}

// endKeepers ends the panes the pane host of a killed hub still holds
// for the next hub on root (they would run for settings.json
// "paneKeepMinutes" after the test): each pane with a log is adopted and
// ended.
func endKeepers(t testing.TB, root string) {
	lay := layout.Layout{Root: root}
	sock := agent.HostSocket(lay.PaneLogs())
	if _, err := os.Stat(sock); err != nil {
		sock = agent.HostSocket(lay.ShortPaneSocketDir()) // a root too deep (layout.PaneSocketDir)
	}
	if _, err := os.Stat(sock); err != nil {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(lay.PaneLogs(), "*.log"))
	secret, err := lay.EnsurePaneSecret()
	if err != nil {
		t.Errorf("end the killed hub's panes: %v", err)
		return
	}
	for _, log := range logs {
		role := strings.TrimSuffix(filepath.Base(log), ".log")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a, err := agent.AdoptKeeper(ctx, agent.KeeperDial{Socket: sock, Root: root, Pane: role, Secret: secret})
		cancel()
		if err == nil {
			a.End()
		}
	}
}

func (h *hubProc) url() string { return fmt.Sprintf("ws://127.0.0.1:%d/", h.port) }

// stop sends SIGTERM and expects a clean exit 0.
func (h *hubProc) stop() {
	h.t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("hub exit after SIGTERM: %v\n%s", err, h.log.String())
		}
	case <-time.After(30 * time.Second):
		h.t.Fatalf("hub did not stop after SIGTERM\n%s", h.log.String())
	}
	h.done <- nil
}

// kill kills the hub's process group with SIGKILL. h.done holds the exit
// result once the hub has exited; readers put it back for the next reader.
func (h *hubProc) kill() {
	select {
	case err := <-h.done:
		h.done <- err
		return
	default:
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-h.done:
		h.done <- err
	case <-time.After(10 * time.Second):
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, root string, env []string, name string, args ...string) result {
	t.Helper()
	return runWith(t, root, env, "", name, args...)
}

// runStdin runs a binary with stdin.
func runStdin(t *testing.T, root, stdin, name string, args ...string) result {
	t.Helper()
	return runWith(t, root, nil, stdin, name, args...)
}

// runWith runs the binary name (hm, hm-send, or the path of another
// build) in root with env and stdin.
func runWith(t *testing.T, root string, env []string, stdin, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin, raceEnv := name, []string(nil) // a path: that build
	if !filepath.IsAbs(name) {
		bin, raceEnv = hmBinary(t, name)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv(root, append(env, raceEnv...)...)
	cmd.Dir = root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", name, err)
	}
	return result{code, out.String(), errb.String()}
}

func operator(t *testing.T, root string) string {
	t.Helper()
	tok, err := layout.Layout{Root: root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func listen(t *testing.T, h *hubProc, role string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Register(ctx, role, operator(t, h.root), true); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHmSendEndToEnd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--no-panes")
	builder := listen(t, h, "builder")

	r := run(t, root, []string{"SQUIDRUN_ROLE=architect"}, "hm-send", "builder", "tests", "pass")
	if r.code != 0 || r.stdout != "delivered to builder (delivered.websocket, seq 1): received by its listener; seen by the agent once the listener acknowledges it\n" {
		t.Fatalf("delivered: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, raw, err := builder.Next(ctx)
	if err != nil || !strings.Contains(string(raw), `"content":"(ARCH #1): tests pass"`) {
		t.Fatalf("listener got %s %v", raw, err)
	}
	r = run(t, root, nil, "hm-send", "oracle", "(ARCH #2): queued", "--role", "architect", "--json")
	var ack proto.Ack
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ack) != nil || ack.Status != "accepted.unverified" || ack.Seq != 2 {
		t.Fatalf("--json: %+v", r)
	}
	r = run(t, root, nil, "hm", "send", "oracle", "--stdin", "--role", "architect")
	if r.code != 2 && r.code != 0 {
		t.Fatalf("stdin: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nobody", "hello"}, 1, "invalid_target"},
		{[]string{"../etc", "hello"}, 1, "invalid_target"},
		{[]string{"builder"}, 2, "missing message"},
		{[]string{}, 2, "missing target"},
		{[]string{"builder", "x", "--bogus"}, 2, "unknown flag"},
		{[]string{"architect", "(ARCH #9): forged", "--role", "builder"}, 0, ""}, // operator token may send as any role
	} {
		r := run(t, root, nil, "hm-send", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("hm-send %v: %+v, want exit %d with %q", tc.args, r, tc.code, tc.want)
		}
	}
	// A pane token for another role is refused.
	r = run(t, root, []string{"HM_TOKEN=not-a-token", "SQUIDRUN_ROLE=oracle"}, "hm-send", "builder", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "unauthorized") {
		t.Fatalf("bad token: %+v", r)
	}

	// A pane program adopted by a hub restarted on another port keeps
	// the old port in $HM_PORT: nobody listens there, and hm-send finds
	// the hub runtime/hub.json names (before, it wrote a fallback file).
	r = run(t, root, []string{"SQUIDRUN_ROLE=architect", "HM_PORT=" + testutil.ClosedPort(t)}, "hm-send", "oracle", "(ARCH #3): after a move")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "accepted for oracle") {
		t.Fatalf("hm-send with a stale $HM_PORT: %+v, want the hub of hub.json", r)
	}

	h.stop()
	// Hub down: fallback file and exit 0; --no-fallback exits 1.
	r = run(t, root, []string{"SQUIDRUN_ROLE=architect", fmt.Sprintf("HM_PORT=%d", h.port)}, "hm-send", "builder", "while", "down")
	if r.code != 0 || !strings.HasPrefix(r.stderr, "fallback.triggered: ") {
		t.Fatalf("fallback: %+v", r)
	}
	path := strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "wrote ")+len("wrote "):])
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(data), "[HM-MESSAGE-ID:hm-") || !strings.Contains(string(data), "while down") {
		t.Fatalf("trigger file %s: %q %v", path, data, err)
	}
	if filepath.Dir(path) != filepath.Join(root, ".squidrun", "triggers") {
		t.Fatalf("trigger file outside triggers/: %s", path)
	}
	r = run(t, root, []string{fmt.Sprintf("HM_PORT=%d", h.port)}, "hm-send", "builder", "x", "--no-fallback")
	if r.code != 1 {
		t.Fatalf("--no-fallback: %+v", r)
	}
}

func TestAckedMessagesSurviveKill9(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--no-panes", "--rate-limit", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.url())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, "architect", operator(t, root), false); err != nil {
		t.Fatal(err)
	}
	// Send until the hub is killed mid-burst; keep every id that was ACKed.
	var acked []string
	var nAcked atomic.Int64
	killed := make(chan struct{})
	go func() {
		for nAcked.Load() < 200 {
			time.Sleep(time.Millisecond)
		}
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		close(killed)
	}()
	for i := 0; ; i++ {
		id := fmt.Sprintf("k9-%05d", i)
		ack, _, err := c.Send(ctx, proto.Frame{Type: "send", Target: "oracle", Content: fmt.Sprintf("burst %d", i), MessageID: id})
		if err != nil {
			break
		}
		if ack.OK {
			acked = append(acked, id)
			nAcked.Add(1)
		}
	}
	<-killed
	h.kill()
	if len(acked) < 200 {
		t.Fatalf("only %d acked before the kill", len(acked))
	}
	h2 := startHub(t, root, "--no-panes")
	oracle := listen(t, h2, "oracle")
	got := map[string]bool{}
	for len(got) < len(acked) {
		typ, raw, err := oracle.Next(ctx)
		if err != nil {
			t.Fatalf("after restart got %d of %d acked messages: %v", len(got), len(acked), err)
		}
		if typ != "message" {
			continue
		}
		var m proto.Message
		_ = json.Unmarshal(raw, &m)
		if got[m.MessageID] {
			t.Fatalf("duplicate delivery of %s", m.MessageID)
		}
		got[m.MessageID] = true
		if !strings.HasPrefix(m.Content, "[delayed from session 1] ") {
			t.Fatalf("delayed prefix missing: %q", m.Content)
		}
	}
	for _, id := range acked {
		if !got[id] {
			t.Fatalf("acked message %s lost", id)
		}
	}
	r := run(t, root, nil, "hm", "journal", "verify")
	_ = r // verify is covered once the ledger command lands
}
