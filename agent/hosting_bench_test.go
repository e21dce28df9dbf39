package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// The hosting workload: hostingPanes programs each print hostingPerPane
// bytes of tuiOutput in hostingChunk pieces, hostingPause apart (about
// 200 KiB/s a pane, less the time cat and sleep take to start).
const (
	hostingPanes   = 3
	hostingPerPane = 1536 << 10
	hostingChunk   = 8 << 10
	hostingPause   = "0.04"
	// hostingSettle is how long a host is left, after the last program
	// printed its last byte, to finish with what is still in the PTYs.
	hostingSettle = 500 * time.Millisecond
	// hostingCheck is how often the bench looks for the programs' done
	// files: seldom, as the bench's own process is one of the measured.
	hostingCheck = 100 * time.Millisecond
)

// hostingGen is the program each host runs in a pane, as
// `sh gen.sh CHUNKS CONTROL N`: it waits for CONTROL/go, prints every
// chunk file, creates CONTROL/done.N and sleeps.
const hostingGen = `while [ ! -e "$2/go" ]; do sleep 0.05; done
for f in "$1"/chunk.*; do cat "$f"; sleep ` + hostingPause + `; done
: > "$2/done.$3"
exec sleep 3600
`

// hostingWorkload is the generator and its chunk files in dir.
type hostingWorkload struct {
	dir   string
	gen   string
	total int64 // bytes all the panes print together
}

func newHostingWorkload(b *testing.B) hostingWorkload {
	b.Helper()
	w := hostingWorkload{dir: filepath.Join(b.TempDir(), "chunks")}
	if err := os.Mkdir(w.dir, 0o700); err != nil {
		b.Fatal(err)
	}
	out := bytes.Repeat(tuiOutput(), hostingPerPane/len(tuiOutput())+1)[:hostingPerPane]
	for i := 0; i*hostingChunk < len(out); i++ {
		name := filepath.Join(w.dir, fmt.Sprintf("chunk.%05d", i))
		if err := os.WriteFile(name, out[i*hostingChunk:min(len(out), (i+1)*hostingChunk)], 0o600); err != nil {
			b.Fatal(err)
		}
	}
	w.gen = filepath.Join(filepath.Dir(w.dir), "gen.sh")
	if err := os.WriteFile(w.gen, []byte(hostingGen), 0o600); err != nil {
		b.Fatal(err)
	}
	w.total = int64(hostingPanes) * int64(len(out))
	return w
}

// command is pane i's program, reporting to the control directory ctl.
func (w hostingWorkload) command(ctl string, i int) string {
	return fmt.Sprintf("exec sh %s %s %s %d", shellQuote(w.gen), shellQuote(w.dir), shellQuote(ctl), i)
}

// measure starts the programs (they wait for ctl/go), waits until all
// are done and the host settled, and returns the CPU time process pid
// used meanwhile.
func (w hostingWorkload) measure(b *testing.B, pid int, ctl string) time.Duration {
	b.Helper()
	before, err := testutil.ReadProcUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctl, "go"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	// Not poll.For: its checks would count as the host's work.
	deadline := time.Now().Add(10 * time.Minute)
	for {
		done, _ := filepath.Glob(filepath.Join(ctl, "done.*"))
		if len(done) == hostingPanes {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d programs printed all their output", len(done), hostingPanes)
		}
		time.Sleep(hostingCheck)
	}
	time.Sleep(hostingSettle)
	after, err := testutil.ReadProcUsage(pid)
	if err != nil {
		b.Fatal(err)
	}
	return after.Sub(before).CPU
}

// BenchmarkHosting measures the CPU time a host spends per MiB of TUI-like
// pane output (tuiOutput), three 120x40 panes at about 200 KiB/s each: hm's
// panes in this process (the pane log on, as the hub has it) and a tmux
// server hosting the same programs, in the same run (#36: hm ≤ 0.8× tmux).
// Only the host process is counted, not the programs.
func BenchmarkHosting(b *testing.B) {
	w := newHostingWorkload(b)
	var hmCPU, tmuxCPU time.Duration
	for i := 0; i < b.N; i++ {
		tmuxCPU += hostTmux(b, w)
		hmCPU += hostHm(b, w)
	}
	mib := float64(b.N) * float64(w.total) / (1 << 20)
	b.ReportMetric(tmuxCPU.Seconds()/mib, "tmux-cpu-s/MiB")
	b.ReportMetric(hmCPU.Seconds()/mib, "hm-cpu-s/MiB")
	b.ReportMetric(float64(hmCPU)/float64(tmuxCPU), "hm/tmux")
}

// hostHm runs the workload in hm panes and returns the CPU time used.
func hostHm(b *testing.B, w hostingWorkload) time.Duration {
	b.Helper()
	ctl := b.TempDir()
	var panes []*Pane
	for i := range hostingPanes {
		p, err := Start(b.Context(), Spec{
			Role: fmt.Sprintf("host%d", i), PaneID: strconv.Itoa(i), Header: "HOST",
			Command: w.command(ctl, i),
			LogPath: filepath.Join(ctl, "logs", fmt.Sprintf("host%d.log", i)),
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		panes = append(panes, p)
	}
	defer func() {
		for _, p := range panes {
			ctx, cancel := contextWithTimeout(time.Minute)
			if err := p.Stop(ctx); err != nil {
				b.Errorf("Stop: %v", err)
			}
			cancel()
		}
	}()
	return w.measure(b, os.Getpid(), ctl)
}

// hostTmux runs the workload in the windows of a tmux server (120x40,
// no status line, no client) and returns the server's CPU time.
func hostTmux(b *testing.B, w hostingWorkload) time.Duration {
	b.Helper()
	ctl := b.TempDir()
	tmux := testutil.StartTmux(b, "set -g default-size 120x40\nset -g status off\n", 120, 40, w.command(ctl, 0))
	defer tmux.Kill()
	for i := 1; i < hostingPanes; i++ {
		tmux.Run("new-window", "-d", w.command(ctl, i))
	}
	if sizes := tmux.Run("list-panes", "-a", "-F", "#{pane_width}x#{pane_height}"); sizes != strings.TrimSpace(strings.Repeat("120x40\n", hostingPanes)) {
		b.Fatalf("tmux panes are %q, want %d of 120x40", sizes, hostingPanes)
	}
	return w.measure(b, tmux.PID(), ctl)
}

// BenchmarkPaneOutput measures the hosting path alone, without the PTY:
// tuiOutput handed to a running pane's output handler in pieces of
// paneOutputPiece bytes (as PTY reads of a busy program come), the pane
// log on, with and without the screen tail a hub's team pane keeps
// (screen_tail.go). It is the place to profile what BenchmarkHosting
// counts.
func BenchmarkPaneOutput(b *testing.B) {
	const paneOutputPiece = 4 << 10
	for _, tail := range []bool{false, true} {
		b.Run(fmt.Sprintf("tail=%v", tail), func(b *testing.B) {
			p, pr := startSilentPane(b, filepath.Join(b.TempDir(), "pane.log"))
			if tail {
				st, err := createScreenTail(filepath.Join(b.TempDir(), "pane.screen"), ScreenTailBytes, nil, time.Time{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.close(true)
				p.vtMu.Lock() // the tail is written under vtMu
				pr.tail = st
				p.vtMu.Unlock()
				defer func() {
					p.vtMu.Lock()
					pr.tail = nil
					p.vtMu.Unlock()
				}()
			}
			out := tuiOutput()
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < len(out); i += paneOutputPiece {
					p.handleOutput(pr, out[i:min(len(out), i+paneOutputPiece)])
				}
			}
		})
	}
}

// startSilentPane starts a pane whose program prints nothing (so that a
// test or benchmark can hand its output handler output of its own) and
// returns it with its run.
func startSilentPane(t testing.TB, logPath string) (*Pane, *proc) {
	t.Helper()
	p := startPane(t, Spec{Command: "exec sleep 3600", LogPath: logPath})
	var pr *proc
	poll.For(t, time.Minute, func() error {
		p.mu.Lock()
		pr = p.proc
		p.mu.Unlock()
		return poll.Want(pr != nil, "the program running")
	})
	return p, pr
}
