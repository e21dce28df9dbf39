package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
)

// neverReadyTeam hosts builder in a pane whose screen never shows its
// profile's ready marker: what is sent to builder stays queued for hooks.
const neverReadyTeam = `{"profiles":{"never":{"ready":["NEVER-SHOWN-MARKER"]}},"panes":[
 {"role":"architect","transport":"ws"},
 {"role":"builder","command":"sleep 3600","profile":"never"},
 {"role":"oracle","transport":"ws"}]}`

// hookCmd is `hm hook <cli> <event>` run as builder's CLI would run it
// (here with the operator token, which may act as builder).
func hookCmd(t testing.TB, root string, port int, input string, args ...string) *exec.Cmd {
	bin, raceEnv := hmBinary(t, "hm")
	cmd := exec.Command(bin, append([]string{"hook"}, args...)...)
	cmd.Env = cleanEnv(root, append(raceEnv, "SQUIDRUN_ROLE=builder", "HM_PORT="+strconv.Itoa(port))...)
	cmd.Dir = root
	cmd.Stdin = strings.NewReader(input)
	return cmd
}

// architect connects to h as architect with the operator token.
func architect(t testing.TB, h *hubProc) *client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.Dial(ctx, h.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	tok, err := layout.Layout{Root: h.root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, "architect", tok, false); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHookBinary runs the hm binary as a CLI's hook: with a message queued
// for builder it prints Claude Code's additionalContext carrying it; with
// the hub down it exits 0 and prints nothing at all.
func TestHookBinary(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, neverReadyTeam)
	h := startHub(t, root)
	arch := architect(t, h)
	if ack, _, err := arch.Send(context.Background(), proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: "bin-1", Content: "over to you"}); err != nil || !ack.OK {
		t.Fatalf("send: %v %+v", err, ack)
	}
	// The session's first message to builder is queued by the hub as it
	// starts, which a loaded machine may finish after bin-1's ACK.
	poll.For(t, 30*time.Second, func() error {
		st, err := fetchStatus(t, h)
		if err != nil {
			return err
		}
		for _, p := range st.Panes {
			if p.Role == "builder" {
				return poll.Want(p.Queued == 2, "builder's pane holds %d messages, want the startup message and bin-1", p.Queued)
			}
		}
		return errors.New("no builder pane in /status")
	})
	var stdout, stderr bytes.Buffer
	cmd := hookCmd(t, root, h.port, `{"hook_event_name":"UserPromptSubmit","prompt":"go"}`, "claude", "UserPromptSubmit")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("hm hook: %v, stderr %q", err, stderr.String())
	}
	var out struct {
		H struct {
			Name    string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.H.Name != "UserPromptSubmit" ||
		!strings.Contains(out.H.Context, "(ARCH #1): over to you [hm:bin-1]") || !strings.Contains(out.H.Context, "[hm:session-") {
		t.Errorf("hm hook printed %q (%v), want the startup message and bin-1 as additionalContext", stdout.String(), err)
	}
	h.stop()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, port := range []int{h.port, closed} {
		cmd := hookCmd(t, root, port, `{"hook_event_name":"Stop","stop_hook_active":false}`, "codex", "Stop")
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("hub down (port %d): %v, printed %q; want exit 0 and nothing", port, err, out)
		}
	}
}

// BenchmarkHookWall times whole `hm hook` processes (exec included), as a
// CLI runs them, against a hub whose builder pane is never ready: "idle"
// is the common call, nothing queued (dial, register, claim, answer);
// "message" claims one queued message, prints it and acknowledges it
// (the ledger commit of delivered.context included); "down" is a call with
// no hub on the port (it prints nothing). Reports the median (p50-ms) and
// p99-ms.
func BenchmarkHookWall(b *testing.B) {
	root := b.TempDir()
	writeSettings(b, root, neverReadyTeam)
	h := startHubTB(b, root)
	arch := architect(b, h)
	drain := func() {
		if out, err := hookCmd(b, root, h.port, `{}`, "claude", "PostToolUse").Output(); err != nil {
			b.Fatalf("hm hook: %v %s", err, out)
		}
	}
	drain() // the startup message
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, bc := range []struct {
		name    string
		queued  bool
		port    int
		cli, ev string
		input   string
	}{
		{"idle", false, h.port, "claude", "UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"go on"}`},
		{"message", true, h.port, "claude", "PostToolUse", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_response":{}}`},
		{"down", false, closed, "gemini", "AfterAgent", `{"hook_event_name":"AfterAgent","stop_hook_active":false}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			run := time.Now().UnixNano() // ids unique across -count runs
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprintf("bench-%s-%d-%d", bc.name, run, i)
				if bc.queued {
					b.StopTimer()
					if ack, _, err := arch.Send(context.Background(), proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: "a message to claim"}); err != nil || !ack.OK {
						b.Fatalf("send: %v %+v", err, ack)
					}
					b.StartTimer()
				}
				cmd := hookCmd(b, root, bc.port, bc.input, bc.cli, bc.ev)
				t0 := time.Now()
				out, err := cmd.Output()
				lat = append(lat, time.Since(t0))
				if err != nil || bc.queued != bytes.Contains(out, []byte("[hm:"+id+"]")) {
					b.Fatalf("hm hook: %v, printed %q", err, out)
				}
			}
			slices.Sort(lat)
			ms := func(q float64) float64 {
				return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
