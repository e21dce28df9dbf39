package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readyPoll is how often BenchmarkReadyAtStart asks the hub for its panes'
// states (GET /status): the resolution of its numbers.
const readyPoll = 10 * time.Millisecond

// BenchmarkReadyAtStart measures, for `hm up` with its default three shell
// panes, the time from the hub's process start to every pane `ready`, and
// to the last of the programs' first prompts (each shell, started through
// a $SHELL wrapper, writes the time just before it execs into its prompt)
// in the same run: #36 asks for every pane ready ≤ 300 ms after its
// program's first prompt.
func BenchmarkReadyAtStart(b *testing.B) {
	hmBinary(b, "hm") // built before the first run is timed
	var ready, prompt, after []time.Duration
	for i := 0; i < b.N; i++ {
		root := b.TempDir()
		stamps := filepath.Join(root, "first-prompts")
		wrapper := filepath.Join(root, "stamped-sh")
		script := "#!/bin/sh\ndate +%s%N >> " + stamps + "\nexec /bin/sh \"$@\"\n"
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		h := startHubEnv(b, root, []string{"SHELL=" + wrapper})
		allReady := waitAllReady(b, h, 3)
		last := lastStamp(b, stamps, 3)
		ready = append(ready, allReady.Sub(t0))
		prompt = append(prompt, last.Sub(t0))
		after = append(after, allReady.Sub(last))
		h.kill()
	}
	b.ReportMetric(p50ms(ready), "ready-ms")
	b.ReportMetric(p50ms(prompt), "prompt-ms")
	b.ReportMetric(p50ms(after), "ready-after-prompt-ms")
}

// waitAllReady polls the hub's /status until n panes are all ready and
// returns when it first saw them so.
func waitAllReady(b *testing.B, h *hubProc, n int) time.Time {
	b.Helper()
	tok, err := os.ReadFile(filepath.Join(h.root, ".squidrun", "runtime", "hub-token"))
	if err != nil {
		b.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/status", h.port)
	deadline := time.Now().Add(60 * time.Second)
	last := "no answer"
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var st struct {
				Panes []struct{ Role, State string } `json:"panes"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			ok := err == nil && len(st.Panes) == n
			for _, p := range st.Panes {
				ok = ok && p.State == "ready"
			}
			if ok {
				return time.Now()
			}
			last = fmt.Sprintf("%+v %v", st.Panes, err)
		} else {
			last = err.Error()
		}
		time.Sleep(readyPoll)
	}
	b.Fatalf("panes not all ready in 60 s: %s\n%s", last, h.log.String())
	return time.Time{}
}

// lastStamp is the latest of the n first-prompt times the panes' shells
// wrote to path (nanoseconds since the epoch, one a line).
func lastStamp(b *testing.B, path string, n int) time.Time {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var ns []int64
	for _, l := range strings.Fields(string(data)) {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			b.Fatalf("%s: %q: %v", path, l, err)
		}
		ns = append(ns, v)
	}
	if len(ns) < n {
		b.Fatalf("%s: %d first prompts, want %d", path, len(ns), n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	return time.Unix(0, ns[n-1])
}
