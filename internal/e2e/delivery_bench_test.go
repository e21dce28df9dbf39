package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// readAt waits for the line holding token in out and returns when the
// reader read it.
func readAt(b *testing.B, out, token string) time.Time {
	b.Helper()
	var at time.Time
	poll.For(b, 30*time.Second, func() error {
		data, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(data), "\n") {
			ts, rest, ok := strings.Cut(l, " ")
			if !ok || !strings.Contains(rest, token) {
				continue
			}
			sec, err := strconv.ParseFloat(ts, 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %w", out, l, err)
			}
			at = time.UnixMicro(int64(sec * 1e6))
			return nil
		}
		return fmt.Errorf("%q not read yet", token)
	})
	return at
}

// p50ms is the median of lat in milliseconds.
func p50ms(lat []time.Duration) float64 {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(lat[len(lat)/2].Microseconds()) / 1000
}

// deliverySpacing leaves the reader quiet between messages, so that every
// message is typed into a pane at its prompt (the idle case).
const deliverySpacing = 600 * time.Millisecond

// BenchmarkDeliveryCanonical measures, for a program reading its terminal
// in canonical mode, the time from a sender's process start to the line
// read by the program: hm-send into a pane of the `default` profile, and
// `tmux send-keys … Enter` into a tmux pane running the same program, in
// the same run (#36: hm p50 ≤ 2× tmux's).
func BenchmarkDeliveryCanonical(b *testing.B) {
	root := b.TempDir()
	hmOut := filepath.Join(root, "builder.lines")
	writeSettings(b, root, fmt.Sprintf(`{"panes":[
	 {"role":"architect","command":"exec sh","profile":"shell"},
	 {"role":"builder","command":%q,"profile":"default"}]}`, testutil.LineReaderCommand(hmOut)))
	h := startHubTB(b, root, "--rate-limit", "0")
	bin, raceEnv := hmBinary(b, "hm-send")
	env := cleanEnv(h.root, append(raceEnv, "SQUIDRUN_ROLE=architect")...)
	hmSend := func(token string) time.Time {
		cmd := exec.Command(bin, "builder", token)
		cmd.Env, cmd.Dir = env, h.root
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("hm-send: %v %s\n%s", err, out, h.log.String())
		}
		return t0
	}

	tmuxOut := filepath.Join(b.TempDir(), "pane.lines")
	tmux := testutil.StartTmux(b, "", 120, 40, testutil.LineReaderCommand(tmuxOut))
	sendKeys := func(token string) time.Time {
		cmd := tmux.Command("send-keys", "-t", "0", token, "Enter")
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tmux send-keys: %v: %s", err, out)
		}
		return t0
	}

	// Warm up both (the pane's first prompt, the binaries in the page cache).
	hmSend("warm-hm")
	readAt(b, hmOut, "warm-hm")
	sendKeys("warm-tmux")
	readAt(b, tmuxOut, "warm-tmux")
	var hmLat, tmuxLat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(deliverySpacing)
		tok := fmt.Sprintf("hm-line-%d", i)
		t0 := hmSend(tok)
		hmLat = append(hmLat, readAt(b, hmOut, tok).Sub(t0))
		time.Sleep(deliverySpacing)
		tok = fmt.Sprintf("tmux-line-%d", i)
		t0 = sendKeys(tok)
		tmuxLat = append(tmuxLat, readAt(b, tmuxOut, tok).Sub(t0))
	}
	b.StopTimer()
	b.ReportMetric(p50ms(hmLat), "hm-p50-ms")
	b.ReportMetric(p50ms(tmuxLat), "tmux-p50-ms")
}
