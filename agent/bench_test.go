package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/agent/internal/vterm"
	"hm/internal/ground/poll"
)

// BenchmarkInjectOverhead measures the delivery engine's own latency, from
// Enqueue to the first byte written into the PTY, excluding the deliberate
// idle wait and Enter delay (goal: p99 < 5 ms).
func BenchmarkInjectOverhead(b *testing.B) {
	spec, _ := fakeSpec(b, "FAKEAGENT_ENTER_MS=0")
	spec.Timing = Profile{Idle: time.Millisecond, EnterDelay: time.Millisecond, Verify: time.Second}
	spec.LogPath = ""
	p := startPane(b, spec)
	poll.For(b, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "fakeagent ready"), "banner") })
	overheads := make([]time.Duration, 0, b.N)
	stages := make(chan Stage, 4)
	report := func(s Stage) { stages <- s }
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p.Enqueue(Delivery{MessageID: fmt.Sprintf("bench-%d", i), Content: fmt.Sprintf("(ARCH #%d): benchmark message", i+1), Report: report})
		for done := false; !done; {
			s := <-stages
			switch s.Kind {
			case StageTyped:
				overheads = append(overheads, s.CommitToFirstByte)
			case StageSubmitted:
				done = true
			default:
				b.Fatalf("stage %v: %v", s.Kind, s.Err)
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(overheads)
	pct := func(q float64) float64 {
		return float64(overheads[int(q*float64(len(overheads)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkCompose measures rendering a typical multi-line message.
func BenchmarkCompose(b *testing.B) {
	o := composeOpts{ID: "hm-1700000000000-abcdef", Content: "(ARCH #12): [ACK REQUIRED] please review\n" + strings.Repeat("detail line with some text\n", 40), Bracketed: true}
	b.SetBytes(int64(len(o.Content)))
	for b.Loop() {
		compose(o, "/tmp/x.txt")
	}
}

// tuiOutput is pane output as agent CLIs print it: scrolling build output
// with colours, then an Ink-style full redraw of a spinner and an input box,
// 40 times, for a 120-column screen.
func tuiOutput() []byte {
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "\x1b[32mok\x1b[0m  hm/agent/pkg%d\t0.%03ds  some build output ● ✓ 漢字\r\n", i, i)
	}
	for f := range 40 {
		for range 6 {
			sb.WriteString("\x1b[2K\x1b[1A")
		}
		sb.WriteString("\x1b[2K\x1b[G")
		fmt.Fprintf(&sb, "\x1b[38;5;174m✻ Thinking… (%ds · esc to interrupt)\x1b[39m\r\n", f)
		sb.WriteString("╭" + strings.Repeat("─", 100) + "╮\r\n")
		sb.WriteString("│ > \x1b[7m \x1b[27m" + strings.Repeat(" ", 95) + "│\r\n")
		sb.WriteString("╰" + strings.Repeat("─", 100) + "╯\r\n")
		sb.WriteString("  \x1b[2m? for shortcuts\x1b[22m\r\n")
	}
	return []byte(sb.String())
}

// BenchmarkEmulator measures the pane's virtual terminal: µs of emulator
// work per KiB of pane output (goal < 20 µs/KiB), on a 120x40 screen fed
// tuiOutput.
func BenchmarkEmulator(b *testing.B) {
	out := tuiOutput()
	vt := vterm.New(DefaultCols, DefaultRows)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		for i := 0; i < len(out); i += readBufferSize {
			vt.Write(out[i:min(len(out), i+readBufferSize)])
		}
		vt.Replies()
	}
	kib := float64(b.N) * float64(len(out)) / 1024
	b.ReportMetric(float64(b.Elapsed().Microseconds())/kib, "us/KiB")
}

// BenchmarkTermScanner measures output scanning with line splitting.
func BenchmarkTermScanner(b *testing.B) {
	chunk := []byte(strings.Repeat("\x1b[32mok\x1b[0m some build output line here\r\n", 500))
	s := termScanner{emit: func(string) {}}
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		s.Write(chunk)
	}
}

// BenchmarkHardCase measures, for each hard-case fake program of
// TestHardCase, how many messages a minute the pane delivers into it
// ("msgs/min"): each iteration types 20 mixed messages and waits until all
// reached a final stage. "lost/op" counts the messages of an iteration that
// the program never took as a prompt (0 when delivery is right).
// "ready-p50-ms" and "ready-p99-ms" are the hub's added latency, readiness
// observed to first byte typed (Stage.CommitToFirstByte), over every
// typing that showed on the screen (each StageTyped, retypes included).
func BenchmarkHardCase(b *testing.B) {
	const perOp = 20
	msgs := hardMessages(100)
	for _, hc := range hardCases() {
		b.Run(hc.name, func(b *testing.B) {
			spec, logPath := hc.spec(b)
			p := startPane(b, spec)
			// The program's start (a menu, late raw mode) is not timed.
			poll.For(b, 30*time.Second, func() error {
				r := p.Status().Readiness
				return poll.Want(r == Ready.String(), "the program's prompt, readiness %q", r)
			})
			stages := newStageLog()
			sent := map[string]bool{}
			var ids []string
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var last string
				for k := range perOp {
					m := msgs[(i*perOp+k)%len(msgs)]
					last = fmt.Sprintf("%s-%d", m.id, i)
					sent[last] = true
					ids = append(ids, last)
					p.Enqueue(Delivery{MessageID: last, Content: m.content, Report: stages.reporter(last)})
				}
				poll.Every(b, time.Minute, 5*time.Millisecond, func() error { // timed: no backoff
					q := p.Status().Queued
					return poll.Want(stages.final(last) && q == 0, "%d messages final, %d queued", perOp-q, q)
				})
			}
			elapsed := time.Since(start)
			b.StopTimer()
			for _, r := range readPrompts(b, logPath) {
				if mt := trailerRE.FindStringSubmatch(r.Prompt); mt != nil && r.Discarded == "" {
					delete(sent, mt[1])
				}
			}
			var added []time.Duration
			for _, id := range ids {
				for _, s := range stages.get(id) {
					if s.Kind == StageTyped {
						added = append(added, s.CommitToFirstByte)
					}
				}
			}
			b.ReportMetric(float64(b.N*perOp)/elapsed.Minutes(), "msgs/min")
			b.ReportMetric(float64(len(sent))/float64(b.N), "lost/op")
			if len(added) > 0 {
				b.ReportMetric(durationPct(added, 0.50), "ready-p50-ms")
				b.ReportMetric(durationPct(added, 0.99), "ready-p99-ms")
			}
		})
	}
}

// durationPct returns the q-quantile of d (nearest rank below) in
// milliseconds; it sorts d.
func durationPct(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))]) / float64(time.Millisecond)
}
