package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/promptlog"
)

// rssMB reads a process's current (VmRSS) or peak (VmHWM) resident set.
func rssMB(pid int, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(l)
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

func startHubB(b *testing.B, args ...string) *hubProc {
	return startHubTB(b, b.TempDir(), args...)
}

// BenchmarkHmSendWall times whole hm-send processes delivering one message
// to a listener.
func BenchmarkHmSendWall(b *testing.B) {
	h := startHubB(b, "--no-panes")
	ctx := context.Background()
	c, err := client.Dial(ctx, h.url())
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	tok, _ := os.ReadFile(filepath.Join(h.root, ".squidrun", "runtime", "hub-token"))
	if _, err := c.Register(ctx, "builder", strings.TrimSpace(string(tok)), true); err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			if _, _, err := c.Next(context.Background()); err != nil {
				return
			}
		}
	}()
	bin, raceEnv := hmBinary(b, "hm-send")
	env := cleanEnv(h.root, append(raceEnv, "SQUIDRUN_ROLE=architect")...)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "builder", "tests pass")
		cmd.Env, cmd.Dir = env, h.root
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		lat = append(lat, time.Since(t0))
		if err != nil || !strings.Contains(string(out), ": received by its listener") {
			b.Fatalf("hm-send: %v %s", err, out)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkIdleHubRSS measures the hub with its default three shell panes,
// idle.
func BenchmarkIdleHubRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		h := startHubB(b)
		// Let the panes start and their first messages settle.
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		rss, err := rssMB(h.cmd.Process.Pid, "VmRSS")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rss, "rss-MB")
		h.kill()
	}
}

// busyTeam hosts three fake agent panes that stay busy: after each prompt a
// fake prints a line every 10 ms for busyMs (scrolling output), then draws
// a braille spinner in place for spinMs, throwing input away meanwhile, and
// only then shows its prompt. The hub waits both out: the scrolling screen
// is never quiet, the spinner is a busy marker of their profile.
func busyTeam(root string, busyMs, spinMs int) string {
	env := []string{fmt.Sprintf("FAKEAGENT_BUSY_MS=%d", busyMs), fmt.Sprintf("FAKEAGENT_SPINNER_MS=%d", spinMs)}
	return fmt.Sprintf(`{"profiles":{"busyfake":{"ready":[">"],"busy":["⠋","⠙","⠹","⠸","⠼","⠴","⠦","⠧","⠇","⠏"]}},"panes":[
	 {"role":"architect","command":%q,"profile":"busyfake"},
	 {"role":"builder","command":%q,"profile":"busyfake"},
	 {"role":"oracle","command":%q,"profile":"busyfake"}]}`,
		agentCommand(root, "architect", env...), agentCommand(root, "builder", env...), agentCommand(root, "oracle", env...))
}

// BenchmarkBusyPanesRSS measures the hub's resident set ("rss-MB", goal
// < 40 MB, #15) with three busy panes: each hosts a fake agent that prints
// continuously (see busyTeam) while an operator sends each pane a message
// every 250 ms for 8 s, so that the panes never go quiet and their queues
// keep being typed from. The resident set is read at the end of those 8 s,
// with the messages still flowing.
func BenchmarkBusyPanesRSS(b *testing.B) {
	roles := []string{"architect", "builder", "oracle"}
	for i := 0; i < b.N; i++ {
		root := b.TempDir()
		writeSettings(b, root, busyTeam(root, 1000, 500))
		h := startHubTB(b, root, "--rate-limit", "0")
		ctx := context.Background()
		tok, err := layout.Layout{Root: root}.ReadToken()
		if err != nil {
			b.Fatal(err)
		}
		op, err := client.Dial(ctx, h.url())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { op.CloseNow() })
		if _, err := op.Register(ctx, "user", tok, false); err != nil {
			b.Fatal(err)
		}
		tick := time.NewTicker(250 * time.Millisecond)
		for n, end := 0, time.Now().Add(8*time.Second); time.Now().Before(end); n++ {
			for _, r := range roles {
				content := fmt.Sprintf("(USER #%d): busy pane message %d for %s, keep working", n+1, n, r)
				if ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: r, Content: content}); err != nil || !ack.OK {
					b.Fatalf("send to %s: %+v %v", r, ack, err)
				}
			}
			<-tick.C
		}
		tick.Stop()
		rss, err := rssMB(h.cmd.Process.Pid, "VmRSS")
		if err != nil {
			b.Fatal(err)
		}
		// The panes took messages meanwhile (the fakes log each prompt).
		for _, r := range roles {
			ps, err := promptlog.Read(filepath.Join(root, r+".jsonl"))
			if err != nil || len(ps) < 2 {
				b.Fatalf("pane %s took %d prompts in 8 s (%v)\n%s", r, len(ps), err, h.log.String())
			}
		}
		b.ReportMetric(rss, "rss-MB")
		h.kill()
	}
}

// BenchmarkHubPeakRSS measures peak RSS after a 20,000-message burst from
// 4 senders to 2 listeners.
func BenchmarkHubPeakRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		h := startHubB(b, "--no-panes", "--rate-limit", "0")
		ctx := context.Background()
		tok, _ := os.ReadFile(filepath.Join(h.root, ".squidrun", "runtime", "hub-token"))
		token := strings.TrimSpace(string(tok))
		dial := func(role string, listen bool) *client.Client {
			c, err := client.Dial(ctx, h.url())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Register(ctx, role, token, listen); err != nil {
				b.Fatal(err)
			}
			return c
		}
		for _, r := range []string{"builder", "oracle"} {
			l := dial(r, true)
			defer l.CloseNow()
			go func() {
				for {
					if _, _, err := l.Next(context.Background()); err != nil {
						return
					}
				}
			}()
		}
		var wg sync.WaitGroup
		for s := 0; s < 4; s++ {
			c := dial("user", false)
			defer c.CloseNow()
			wg.Add(1)
			go func(s int) {
				defer wg.Done()
				for n := 0; n < 5000; n++ {
					target := []string{"builder", "oracle"}[n%2]
					if _, _, err := c.Send(ctx, proto.Frame{Type: "send", Target: target, Content: "(ARCH #0): burst"}); err != nil {
						return
					}
				}
			}(s)
		}
		wg.Wait()
		peak, err := rssMB(h.cmd.Process.Pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(peak, "peak-MB")
		h.kill()
	}
}
