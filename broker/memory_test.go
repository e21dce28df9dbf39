package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/testutil"
)

// sessionRun sends n messages from one sender to one listener that
// acknowledges each (message-ack), all in one session, and calls sample
// after every `every` messages have arrived. The loop is closed on the
// acknowledgements: after every batch of acks the listener sends a
// heartbeat, whose reply means the hub has processed those acks, and only
// then may the sender have that many more messages out (window 256), so
// the test measures what the hub keeps for acknowledged messages, not a
// backlog of acks it has not read yet.
func sessionRun(tb testing.TB, h *harness, n, every int, sample func(done int)) {
	tb.Helper()
	const window, batch = 256, 64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dial := func(role string, listen bool) *client.Client {
		c, err := client.Dial(ctx, h.url)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.CloseNow() })
		tok := operatorToken
		if role != "user" {
			tok = h.tokens.Issue(role)
		}
		if _, err := c.Register(ctx, role, tok, listen); err != nil {
			tb.Fatal(err)
		}
		return c
	}
	listener := dial("builder", true)
	sender := dial("architect", false)
	credit := make(chan int, n/batch+2)
	listenErr := make(chan error, 1)
	go func() {
		unconfirmed := 0
		for got, confirmed := 0, 0; confirmed < n; {
			typ, raw, err := listener.Next(ctx)
			if err != nil {
				listenErr <- fmt.Errorf("listener after %d of %d: %w", got, n, err)
				return
			}
			switch typ {
			case proto.TypeHeartbeatAck:
				var a struct {
					RequestID string `json:"requestId"`
				}
				_ = json.Unmarshal(raw, &a)
				k, _ := strconv.Atoi(a.RequestID)
				confirmed += k
				credit <- k
				continue
			case proto.TypeMessage:
			default:
				continue
			}
			var m proto.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				listenErr <- err
				return
			}
			if err := listener.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID}); err != nil {
				listenErr <- err
				return
			}
			got++
			unconfirmed++
			if unconfirmed == batch || got == n {
				if err := listener.WriteJSON(ctx, proto.Frame{Type: proto.TypeHeartbeat, RequestID: strconv.Itoa(unconfirmed)}); err != nil {
					listenErr <- err
					return
				}
				unconfirmed = 0
			}
			if sample != nil && got%every == 0 {
				sample(got)
			}
		}
		listenErr <- nil
	}()
	ackErr := make(chan error, 1)
	go func() {
		for acked := 0; acked < n; {
			typ, raw, err := sender.Next(ctx)
			if err != nil {
				ackErr <- fmt.Errorf("sender after %d ACKs: %w", acked, err)
				return
			}
			if typ != "send-ack" {
				continue
			}
			var a proto.Ack
			if err := json.Unmarshal(raw, &a); err != nil || !a.OK {
				ackErr <- fmt.Errorf("send refused: %s", raw)
				return
			}
			acked++
		}
		ackErr <- nil
	}()
	avail := window
	for i := range n {
		for avail == 0 {
			select {
			case k := <-credit:
				avail += k
			case err := <-listenErr:
				tb.Fatalf("listener stopped: %v", err)
			}
		}
		avail--
		if err := sender.WriteJSON(ctx, proto.Frame{Type: "send", Target: "builder", Content: "m", MessageID: "mem-" + strconv.Itoa(i)}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := <-ackErr; err != nil {
		tb.Fatal(err)
	}
	if err := <-listenErr; err != nil {
		tb.Fatal(err)
	}
}

// heapInUse is the live heap after a full collection, in MiB.
func heapInUse() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// rssMiB is the process's resident set (Linux /proc; 0 elsewhere).
func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// TestTimingSessionStateBounded: 20k messages in one session to a listener that
// acknowledges them leave the listener's delivered set small and the heap
// flat. Before the fix the set held every id of the session (20,000). The
// 1M run is BenchmarkSessionMemory1M (scripts/bench): the acknowledgement
// path runs at about 2,000 messages/s here, too slow for a unit test.
//
// It is a Timing test: the race detector makes its 20k acknowledged
// messages take over a minute and inflates the heap it measures, so it runs
// in make test's un-raced pass.
func TestTimingSessionStateBounded(t *testing.T) {
	// Not parallel: it measures the process's heap.
	if testutil.Race {
		t.Skip("runs in make test's un-raced Timing pass (-run Timing)")
	}
	const n, every = 20_000, 2_000
	h := newHarnessAt(t, t.TempDir()+"/mem.db", 1, noRateLimit)
	var base, peak float64
	var maxSet int
	sessionRun(t, h, n, every, func(done int) {
		for _, s := range h.b.DeliveredSetSizes() {
			maxSet = max(maxSet, s)
		}
		if done == 2*every {
			base = heapInUse()
		} else if done > 2*every {
			peak = max(peak, heapInUse())
		}
	})
	t.Logf("delivered set at most %d; heap in use %.1f MiB after %d, at most %.1f MiB up to %d", maxSet, base, 2*every, peak, n)
	if maxSet > 8192 {
		t.Fatalf("a listener's delivered set reached %d ids over %d acknowledged messages; want it bounded (≤ 8192)", maxSet, n)
	}
	if peak-base > 16 {
		t.Fatalf("heap in use grew %.1f MiB (%.1f → %.1f) over %d messages; want < 16 MiB", peak-base, base, peak, n-2*every)
	}
}

// BenchmarkSessionMemory1M sends 1M messages in one session through the
// broker to a listener that acknowledges each, and reports the heap in use
// and the resident set at the end (goal: RSS < 64 MB). Run it with
// -benchtime=1x (scripts/bench does).
func BenchmarkSessionMemory1M(b *testing.B) {
	for range b.N {
		h := newHarnessAt(b, b.TempDir()+"/mem.db", 1, noRateLimit)
		start := time.Now()
		sessionRun(b, h, 1_000_000, 1_000_000, nil)
		el := time.Since(start)
		maxSet := 0
		for _, s := range h.b.DeliveredSetSizes() {
			maxSet = max(maxSet, s)
		}
		b.ReportMetric(heapInUse(), "heap-MiB")
		b.ReportMetric(rssMiB(), "rss-MiB")
		b.ReportMetric(float64(maxSet), "delivered-set")
		b.ReportMetric(1_000_000/el.Seconds(), "msgs/s")
	}
}

func noRateLimit(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 }
