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

	"hm/internal/hub"
	"hm/internal/layout"
)

// BenchmarkTriggerToCommit measures the latency from the rename of a trigger
// file into place to the commit of its ledger row, through the whole hub,
// and counts files that never became rows.
func BenchmarkTriggerToCommit(b *testing.B) {
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
	defer func() { cancel(); <-done }()

	events, stop := h.Ledger.Subscribe(b.N + 1024)
	defer stop()
	var mu sync.Mutex
	committed := map[string]time.Time{}
	got := make(chan struct{}, b.N)
	go func() {
		for ev := range events {
			if ev.Event == "brokered" {
				mu.Lock()
				committed[ev.MessageID] = time.Now()
				mu.Unlock()
				got <- struct{}{}
			}
		}
	}()
	dir := lay.Triggers()
	renamed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("tb-%06d", i)
		name := "oracle." + id + ".txt"
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte("[HM-MESSAGE-ID:"+id+"]\n(ARCH #0): bench"), 0o600); err != nil {
			b.Fatal(err)
		}
		renamed[id] = time.Now()
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(2 * time.Millisecond) // a steady stream, not one burst
		}
	}
	timeout := time.After(60 * time.Second)
	for n := 0; n < b.N; n++ {
		select {
		case <-got:
		case <-timeout:
			n = b.N
		}
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	var lat []time.Duration
	lost := 0
	for id, t0 := range renamed {
		t1, ok := committed[id]
		if !ok {
			lost++
			continue
		}
		lat = append(lat, t1.Sub(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(lost), "lost")
}
