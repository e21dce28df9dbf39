package realcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/benchutil"
	"hm/internal/realcli/model"
)

// Issue #32's benchmark: each real CLI in an hm pane, typing only and
// hook-wired, against the scripted model.
//
//   - latency: an idle agent and a model that answers at once; one message
//     at a time, the pane ready again before the next: send → the model's
//     request holding the message (p50-ms, p99-ms).
//   - floor, in the same run: a hook on the CLI's own prompt-submit event
//     (UserPromptSubmit, BeforeAgent) appends the time to a file; the
//     CLI's time from that stamp to its request (floor-p50-ms,
//     floor-p99-ms). With hooks wired, hm's hook on the same event runs
//     beside it and is inside that time.
//   - throughput: benchBurst messages sent back to back into the same CLI,
//     whose model now takes 2 s a turn: messages per minute from the
//     first send to the end of the turn that got the last one (msgs/min),
//     and the messages that did not reach the model exactly once, alone
//     (lost).
//
// make bench (scripts/bench) runs BenchmarkRealCLI/<cli>/<mode> with
// -benchtime 1x.
func BenchmarkRealCLI(b *testing.B) {
	for _, c := range agentCLIs {
		if _, _, err := Find(c.name); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range agentCLIs {
		b.Run(c.name, func(b *testing.B) {
			for _, hooks := range []bool{false, true} {
				b.Run(map[bool]string{false: "typing", true: "hooks"}[hooks], func(b *testing.B) {
					for range b.N {
						benchPane(b, c, hooks)
					}
				})
			}
		})
	}
}

const (
	benchMessages = 20 // latency samples per CLI and mode
	benchBurst    = 8  // messages of the throughput run
	benchTurnWord = "BENCH-TWO-SECOND-TURN"
	benchTurn     = 2 * time.Second
	benchWait     = 90 * time.Second // for one message or the pane: generous, for a loaded machine
)

// benchScript answers at once, or after benchTurn for benchTurnWord.
func benchScript(r model.Request) model.Reply {
	if r.Main && !r.ToolResult && strings.Contains(r.New(), benchTurnWord) {
		return model.Reply{Delay: benchTurn}
	}
	return model.Reply{}
}

// benchPane runs one CLI in one mode and reports its metrics.
func benchPane(b *testing.B, c agentCLI, hooks bool) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := model.Start(ctx, testLogger(b), benchScript)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	stamps := filepath.Join(b.TempDir(), "prompt-submit.ns")
	r := startPane(b, srv, withStamp(c, stamps), hooks)
	b.StartTimer()

	var lat, floor []time.Duration
	for i := 1; i <= benchMessages; i++ {
		sent := time.Now()
		m := r.send(b, fmt.Sprintf("benchmark message %d of %d", i, benchMessages))
		q := r.awaitRequest(b, m)
		lat = append(lat, q.At.Sub(sent))
		f, err := floorOf(stamps, sent, q.At)
		if err != nil {
			b.Fatalf("%s, message %d: %v\n%s", r.prefix, i, err, r.evidence())
		}
		floor = append(floor, f)
		if err := r.waitReady(ctx, benchWait); err != nil {
			b.Fatalf("%s: not ready again after message %d: %v\n%s", r.prefix, i, err, r.evidence())
		}
	}
	perMin, lost := r.throughput(b)
	b.StopTimer()

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(benchutil.Percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(benchutil.Percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(benchutil.Percentile(floor, 0.50)), "floor-p50-ms")
	b.ReportMetric(ms(benchutil.Percentile(floor, 0.99)), "floor-p99-ms")
	b.ReportMetric(perMin, "msgs/min")
	b.ReportMetric(float64(lost), "lost")
}

// awaitRequest waits for the model's first main request holding m.
func (r *paneRun) awaitRequest(b *testing.B, m sentMsg) model.Request {
	b.Helper()
	deadline := time.Now().Add(benchWait)
	for {
		reqs := r.reqs()
		if ss := sightings(reqs, m.id); len(ss) > 0 {
			i := slices.IndexFunc(reqs, func(q model.Request) bool { return q.Seq == ss[0].seq })
			return reqs[i]
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %s did not reach the model within %s\n%s", r.prefix, m.id, benchWait, r.evidence())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// throughput sends benchBurst messages back to back, each holding
// benchTurnWord (the model takes benchTurn on a turn holding one), and
// returns the messages that reached the model per minute, from the first
// send to the end of the model's turn that got the last of them (a hook
// may hand several to one turn), and how many did not reach the model
// exactly once, alone.
func (r *paneRun) throughput(b *testing.B) (perMin float64, lost int) {
	b.Helper()
	var ms []sentMsg
	start := time.Now()
	for i := 1; i <= benchBurst; i++ {
		ms = append(ms, r.send(b, fmt.Sprintf("%s: burst message %d of %d", benchTurnWord, i, benchBurst)))
	}
	r.awaitModel(time.Duration(benchBurst)*(benchTurn+benchWait/4), ms...)
	reqs := r.reqs()
	var last time.Time
	for _, m := range ms {
		ss := sightings(reqs, m.id)
		if len(ss) != 1 || ss[0].merged {
			b.Logf("%s: %s (throughput run) did not reach the model exactly once, alone: %s", r.prefix, m.id, seqs(ss))
			lost++
			continue
		}
		at := reqs[slices.IndexFunc(reqs, func(q model.Request) bool { return q.Seq == ss[0].seq })].At
		if at.After(last) {
			last = at
		}
	}
	if n := benchBurst - lost; n > 0 {
		perMin = float64(n) / last.Add(benchTurn).Sub(start).Minutes()
	}
	return perMin, lost
}

// floorOf is the time from the last prompt-submit stamp in file taken
// after sent to at (the model's request).
func floorOf(file string, sent, at time.Time) (time.Duration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("the prompt-submit hook left no stamp: %w", err)
	}
	var stamp time.Time
	for _, l := range strings.Fields(string(data)) {
		ns, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stamp file %s: %w", file, err)
		}
		s := time.Unix(0, ns)
		if !s.Before(sent) && !s.After(at) && s.After(stamp) {
			stamp = s
		}
	}
	if stamp.IsZero() {
		return 0, fmt.Errorf("no prompt-submit stamp between the send (%s) and the model's request (%s) in %s",
			sent.Format(time.StampMicro), at.Format(time.StampMicro), file)
	}
	return at.Sub(stamp), nil
}

// withStamp is c with a hook, in the CLI's scratch (user) configuration,
// on its prompt-submit event that appends the time in nanoseconds to
// file. Codex runs hooks only when trusted: the benchmark bypasses that
// in both modes.
func withStamp(c agentCLI, file string) agentCLI {
	configure := c.configure
	c.configure = func(t testing.TB, scratch, root, modelURL string, hooks bool) ([]string, []string) {
		env, flags := configure(t, scratch, root, modelURL, hooks)
		hook := map[string]any{"type": "command", "command": "date +%s%N >> " + file}
		switch c.name {
		case "claude":
			addHook(t, filepath.Join(scratch, "claude", "settings.json"), "UserPromptSubmit", hook)
		case "gemini":
			hook["name"] = "bench-stamp"
			addHook(t, filepath.Join(scratch, "gemini", ".gemini", "settings.json"), "BeforeAgent", hook)
		case "codex":
			addHook(t, filepath.Join(scratch, "codex", "hooks.json"), "UserPromptSubmit", hook)
			if !slices.Contains(flags, "--dangerously-bypass-hook-trust") {
				flags = append(flags, "--dangerously-bypass-hook-trust")
			}
		default:
			t.Fatalf("no prompt-submit event known for %s", c.name)
		}
		return env, flags
	}
	return c
}

// addHook adds hook on event to the settings file path (created if
// missing), keeping what the file holds.
func addHook(t testing.TB, path, event string, hook map[string]any) {
	t.Helper()
	settings := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &settings); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	groups, _ := hooks[event].([]any)
	hooks[event] = append(groups, map[string]any{"hooks": []any{hook}})
	settings["hooks"] = hooks
	writeJSON(t, path, settings)
}
