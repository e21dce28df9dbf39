package hub_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/layout"
	"hm/internal/hub"
)

// triggerBench runs a hub with no panes and records when each trigger
// message's ledger row is committed.
type triggerBench struct {
	dir       string
	mu        sync.Mutex
	committed map[string]time.Time
	got       chan struct{}
	stop      func()
}

func newTriggerBench(b *testing.B, n int) *triggerBench {
	root := b.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		b.Fatal(err)
	}
	ready := make(chan *hub.Hub, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- hub.Run(ctx, hub.Options{Layout: lay, Port: 0, NoPanes: true, Logger: slog.New(slog.DiscardHandler),
			Ready: func(h *hub.Hub) { ready <- h }, Getenv: func(string) string { return "" }})
	}()
	h := <-ready
	tb := &triggerBench{dir: lay.Triggers(), committed: map[string]time.Time{}, got: make(chan struct{}, n)}
	events, stopSub := h.Ledger.Subscribe(n + 1024)
	go func() {
		for ev := range events {
			if ev.Event == "brokered" {
				tb.mu.Lock()
				tb.committed[ev.MessageID] = time.Now()
				tb.mu.Unlock()
				tb.got <- struct{}{}
			}
		}
	}()
	tb.stop = func() { stopSub(); cancel(); <-done }
	return tb
}

// write renames one trigger file into place and returns the rename time.
func (tb *triggerBench) write(b *testing.B, id string) time.Time {
	name := "oracle." + id + ".txt"
	tmp := filepath.Join(tb.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte("[HM-MESSAGE-ID:"+id+"]\n(ARCH #0): bench"), 0o600); err != nil {
		b.Fatal(err)
	}
	t := time.Now()
	if err := os.Rename(tmp, filepath.Join(tb.dir, name)); err != nil {
		b.Fatal(err)
	}
	return t
}

// wait waits for n commits (or 60 s) and returns the latencies and the
// number of files that never became rows.
func (tb *triggerBench) wait(n int, renamed map[string]time.Time) ([]time.Duration, int) {
	timeout := time.After(60 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-tb.got:
		case <-timeout:
			i = n
		}
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var lat []time.Duration
	lost := 0
	for id, t0 := range renamed {
		t1, ok := tb.committed[id]
		if !ok {
			lost++
			continue
		}
		lat = append(lat, t1.Sub(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, lost
}

func reportLatency(b *testing.B, lat []time.Duration, lost int) {
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(lost), "lost")
}

// BenchmarkTriggerToCommit measures the latency from the rename of a trigger
// file into place to the commit of its ledger row, through the whole hub,
// with files arriving one every 2 ms (500/s, far above a real team's rate).
func BenchmarkTriggerToCommit(b *testing.B) {
	tb := newTriggerBench(b, b.N)
	defer tb.stop()
	renamed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	next := time.Now()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("tb-%06d", i)
		renamed[id] = tb.write(b, id)
		next = next.Add(2 * time.Millisecond)
		if d := time.Until(next); d > 0 {
			time.Sleep(d) // pacing the arrivals is the point of this benchmark
		}
	}
	lat, lost := tb.wait(b.N, renamed)
	b.StopTimer()
	reportLatency(b, lat, lost)
}

// BenchmarkTriggerBurst: 4 writers rename files as fast as they can; every
// file must become exactly one row. Reports the drain rate and the latency
// (which here is mostly time queued behind the rest of the burst).
func BenchmarkTriggerBurst(b *testing.B) {
	tb := newTriggerBench(b, b.N)
	defer tb.stop()
	var mu sync.Mutex
	renamed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < b.N; i += 4 {
				id := fmt.Sprintf("tbb-%06d", i)
				t := tb.write(b, id)
				mu.Lock()
				renamed[id] = t
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	lat, lost := tb.wait(b.N, renamed)
	el := time.Since(start)
	b.StopTimer()
	reportLatency(b, lat, lost)
	b.ReportMetric(float64(b.N)/el.Seconds(), "files/s")
}
