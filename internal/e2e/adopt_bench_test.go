package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// BenchmarkAdoptRestart measures a hub restart after a kill -9 (#37):
// from the new `hm up`'s start to a message read by the pane's program,
// which the new hub adopted from its keeper (a canonical-mode line reader
// in a `default`-profile pane; the message sent with hm-send once the hub
// listens). Every cycle checks the program was not restarted.
func BenchmarkAdoptRestart(b *testing.B) {
	root := b.TempDir()
	out := filepath.Join(root, "builder.lines")
	writeSettings(b, root, fmt.Sprintf(`{"panes":[{"role":"builder","command":%q,"profile":"default"}]}`, testutil.LineReaderCommand(out)))
	bin, raceEnv := hmBinary(b, "hm-send")
	env := cleanEnv(root, append(raceEnv, "SQUIDRUN_ROLE=architect")...)
	send := func(h *hubProc, token string) {
		cmd := exec.Command(bin, "builder", token)
		cmd.Env, cmd.Dir = env, root
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("hm-send: %v %s\n%s", err, o, h.log.String())
		}
	}
	h := startHubTB(b, root, "--rate-limit", "0")
	send(h, "warm")
	readAt(b, out, "warm")
	pid := builderPID(b, root)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.kill()
		t0 := time.Now()
		h = startHubTB(b, root, "--rate-limit", "0")
		tok := fmt.Sprintf("after-restart-%d", i)
		send(h, tok)
		lat = append(lat, readAt(b, out, tok).Sub(t0))
		if p := builderPID(b, root); p != pid {
			b.Fatalf("cycle %d: the pane's program is pid %d, was %d: restarted, not adopted\n%s", i, p, pid, hubLog(root))
		}
	}
	b.StopTimer()
	b.ReportMetric(p50ms(lat), "restart-p50-ms")
	h.stop()
}

// builderPID is the builder pane's program pid in `hm status --json`.
func builderPID(b *testing.B, root string) int {
	b.Helper()
	bin, env := hmBinary(b, "hm")
	var pid int
	poll.For(b, 30*time.Second, func() error {
		cmd := exec.Command(bin, "status", "--json")
		cmd.Env, cmd.Dir = cleanEnv(root, env...), root
		o, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("hm status: %v", err)
		}
		i := bytes.Index(o, []byte(`"pid": `))
		j := bytes.Index(o, []byte(`"role": "builder"`))
		if j < 0 {
			return fmt.Errorf("no builder pane in %s", o)
		}
		k := bytes.Index(o[j:], []byte(`"pid": `))
		if i < 0 || k < 0 {
			return fmt.Errorf("no pid in %s", o)
		}
		f := strings.FieldsFunc(string(o[j+k+len(`"pid": `):]), func(r rune) bool { return r == ',' || r == '\n' })
		if pid, err = strconv.Atoi(strings.TrimSpace(f[0])); err != nil || pid == 0 {
			return fmt.Errorf("builder pid %q: %v", f[0], err)
		}
		return nil
	})
	return pid
}

// sixPanes is the program both hosts run six of.
const sixPanes = 6

// BenchmarkSixPanesMemory measures the memory of a hub hosting six shell
// panes, summed over the hub and its pane host (RSS and PSS, from
// /proc/<pid>/smaps_rollup), beside a tmux server hosting the same six
// shells, in the same run (#37: ≤ 2× tmux).
func BenchmarkSixPanesMemory(b *testing.B) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		b.Fatalf("tmux is needed for the memory floor: run `make deps` (%v)", err)
	}
	var panes []string
	for _, r := range []string{"architect", "builder", "oracle", "p3", "p4", "p5"} {
		panes = append(panes, fmt.Sprintf(`{"role":%q,"command":"exec /bin/sh","profile":"shell"}`, r))
	}
	for i := 0; i < b.N; i++ {
		root := b.TempDir()
		writeSettings(b, root, `{"panes":[`+strings.Join(panes, ",")+`]}`)
		h := startHubTB(b, root)
		time.Sleep(idleSettle)
		pids := append([]int{h.cmd.Process.Pid}, keeperPIDs(b, h.cmd.Process.Pid)...)
		if len(pids) != 2 {
			b.Fatalf("%d pane hosts beside the hub, want one for the six panes", len(pids)-1)
		}
		rss, pss := memMiB(b, pids)
		b.ReportMetric(rss, "hub-rss-MiB")
		b.ReportMetric(pss, "hub-pss-MiB")
		h.stop()

		sock := filepath.Join(b.TempDir(), "tmux.sock")
		run := func(args ...string) []byte {
			cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
			cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
			o, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("tmux %v: %v: %s", args, err, o)
			}
			return o
		}
		run("new-session", "-d", "-x", "120", "-y", "40", "/bin/sh")
		for range sixPanes - 1 {
			run("new-window", "/bin/sh")
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(run("display-message", "-p", "#{pid}"))))
		if err != nil {
			b.Fatalf("tmux server pid: %v", err)
		}
		time.Sleep(idleSettle)
		rss, pss = memMiB(b, []int{pid})
		b.ReportMetric(rss, "tmux-rss-MiB")
		b.ReportMetric(pss, "tmux-pss-MiB")
		run("kill-server")

		rss, pss = memFloor(b, &builds.memfloor, "", filepath.Join(b.TempDir(), "floor.db"))
		b.ReportMetric(rss, "floor-rss-MiB")
		b.ReportMetric(pss, "floor-pss-MiB")
		rss, pss = memFloor(b, &builds.gofloor, "nosqlite")
		b.ReportMetric(rss, "gofloor-rss-MiB")
		b.ReportMetric(pss, "gofloor-pss-MiB")
	}
}

// memFloor runs memfloor built with tags (a Go process holding only a
// loopback HTTP server, and given args an SQLite database through the
// ledger's library) and returns its RSS and PSS once it has been idle as
// long as the hubs measured.
func memFloor(b *testing.B, bld *build, tags string, args ...string) (rss, pss float64) {
	b.Helper()
	dir := filepath.Join(binDir, "memfloor", "tags-"+tags)
	if err := bld.do(dir, "-tags", tags, "hm/internal/e2e/internal/memfloor"); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "memfloor"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("memfloor: %q %v: %s", line, err, stderr.String())
	}
	time.Sleep(idleSettle)
	return memMiB(b, []int{cmd.Process.Pid})
}

// keeperPIDs lists the `hm pane-keeper` children of the hub (its pane
// hosts).
func keeperPIDs(b testing.TB, hub int) []int {
	b.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmdline, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err1 != nil || err2 != nil || !bytes.Contains(cmdline, []byte("pane-keeper")) {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(hub) {
			out = append(out, pid)
		}
	}
	return out
}

// memMiB sums the Rss and Pss of smaps_rollup over pids.
func memMiB(b *testing.B, pids []int) (rss, pss float64) {
	b.Helper()
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "Rss:":
				rss += kb / 1024
			case "Pss:":
				pss += kb / 1024
			}
		}
	}
	return rss, pss
}
