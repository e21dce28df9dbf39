package telegram

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/poll"
)

// reportLatency reports p50/p99 in milliseconds and the rate.
func reportLatency(b *testing.B, lat []time.Duration, total time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(float64(len(lat))/total.Seconds(), "msgs/s")
}

func benchConfig(b *testing.B, fake *telegramtest.Server) Config {
	cfg := testConfig(b, fake)
	cfg.Logger = slog.New(slog.DiscardHandler)
	return cfg
}

// BenchmarkSend measures one-part sends to the fake API, ledger calls
// included (in memory).
func BenchmarkSend(b *testing.B) {
	fake := newFake(b)
	store := newMemStore()
	r, err := New(benchConfig(b, fake), store, store.Deliver)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var lat []time.Duration
	start := time.Now()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if err := r.Send(ctx, "m"+strconv.Itoa(i), "", "architect", "(ARCH #1): build is green"); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	reportLatency(b, lat, time.Since(start))
}

// BenchmarkInboundLatency measures the time from an update being queued on
// the API to its commit through Deliver, one at a time.
func BenchmarkInboundLatency(b *testing.B) {
	fake := newFake(b)
	store := newMemStore()
	got := make(chan struct{}, 1)
	store.onDeliver = func(ctx context.Context, in Inbound) error {
		got <- struct{}{}
		return nil
	}
	ru := startRelay(b, benchConfig(b, fake), store)
	poll.For(b, 10*time.Second, func() error {
		return poll.Want(fake.Calls("getUpdates") >= 1, "polling, have %v", fake.Calls("getUpdates"))
	})
	var lat []time.Duration
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "ping"})
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			b.Fatal("update not delivered")
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat, time.Since(start))
	ru.stop(b)
}

// BenchmarkInboundBurst measures throughput for a backlog of updates (each
// committed and its offset saved before the next).
func BenchmarkInboundBurst(b *testing.B) {
	const burst = 200
	fake := newFake(b)
	store := newMemStore()
	ru := startRelay(b, benchConfig(b, fake), store)
	poll.For(b, 10*time.Second, func() error {
		return poll.Want(fake.Calls("getUpdates") >= 1, "polling, have %v", fake.Calls("getUpdates"))
	})
	total := 0
	var elapsed time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range burst {
			fake.Enqueue(telegramtest.Message{ChatID: 42, Text: "backlog"})
		}
		total += burst
		poll.Every(b, 30*time.Second, 5*time.Millisecond, func() error { // timed: no backoff
			d, _, _ := store.snapshot()
			return poll.Want(len(d) >= total, "burst delivered, have %v", len(d))
		})
		elapsed += time.Since(t0)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
	ru.stop(b)
}
