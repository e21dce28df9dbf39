package jsbench_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"hm/internal/ground/benchutil"
)

// The workload is hm's (broker/speed_bench_test.go): one durable consumer
// per "role" subject stands for a listener, each message carries a
// message id (Nats-Msg-Id, which JetStream deduplicates like the ledger's
// messageId), its body is the size of hm's "load" content, every message
// is acknowledged explicitly, and every client has its own TCP connection
// to a server on loopback. The CPU per message is the whole process's
// (server and clients), as for hm.

const (
	streamName = "HM"
	stall      = 5 * time.Second // as broker's throughputStall
)

var roles = []string{"builder", "oracle"}

func subject(role string) string { return "role." + role }

// startServer runs an embedded nats-server with JetStream's file store in
// a temp dir, on a random loopback port, without logging; syncAlways is
// the configuration's `sync_interval: always` (an fsync for every write).
// It creates the stream and one durable pull consumer per role, and
// returns the client URL; the server stops at b's cleanup.
func startServer(b *testing.B, syncAlways bool) string {
	b.Helper()
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: b.TempDir(), SyncAlways: syncAlways, DisableJetStreamBanner: true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	b.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		b.Fatal("nats-server did not start")
	}
	ctx := context.Background()
	_, js := connect(b, s.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{"role.*"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	for _, r := range roles {
		if _, err := js.CreateOrUpdateConsumer(ctx, streamName, jetstream.ConsumerConfig{Durable: r, FilterSubject: subject(r), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			b.Fatal(err)
		}
	}
	return s.ClientURL()
}

// connect opens one client connection (closed at b's cleanup).
func connect(b *testing.B, url string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	b.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return nc, js
}

// consume reads role's messages on a connection of its own and
// acknowledges each: Ack for all but the last, DoubleAck (the server
// confirms it, after the acks before it on the connection) for the n-th.
// seen is called with each message's id.
func consume(ctx context.Context, b *testing.B, url, role string, n int, seen func(id string)) error {
	_, js := connect(b, url)
	cons, err := js.Consumer(ctx, streamName, role)
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	for got := 0; got < n; got++ {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("consumer %s after %d of %d: %w", role, got, n, err)
		}
		if seen != nil {
			seen(m.Headers().Get(jetstream.MsgIDHeader))
		}
		if got < n-1 {
			err = m.Ack()
		} else {
			err = m.DoubleAck(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var body = []byte("load")

// BenchmarkJetStreamLatency: one publisher, serial Publish→PubAck, to a
// stream whose consumer acknowledges every message: p50-µs, p99-µs and
// cpu-µs/msg (the process's CPU over the run per message).
func BenchmarkJetStreamLatency(b *testing.B) {
	url := startServer(b, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	consumed := make(chan error, 1)
	go func() { consumed <- consume(ctx, b, url, "builder", b.N, nil) }()
	_, js := connect(b, url)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu0 := benchutil.ProcessCPU()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := js.Publish(ctx, subject("builder"), body, jetstream.WithMsgID(fmt.Sprintf("al-%d", i))); err != nil {
			b.Fatalf("publish %d: %v", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := benchutil.ProcessCPU() - cpu0
	b.StopTimer()
	if err := <-consumed; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(benchutil.Micros(benchutil.Percentile(lat, 0.5)), "p50-µs")
	b.ReportMetric(benchutil.Micros(benchutil.Percentile(lat, 0.99)), "p99-µs")
	b.ReportMetric(benchutil.Micros(cpu)/float64(b.N), "cpu-µs/msg")
}

// BenchmarkJetStreamThroughput: 4 publishers, each with up to 64
// PublishAsync in flight (a reader takes the PubAcks in order and frees a
// slot for each, as hm's senders do with their ACKs), → 2 durable consumers acknowledging every message: msgs/s, lost
// (not PubAcked, missing or duplicated; any fails the benchmark) and
// cpu-µs/msg. "sync=default" is the file store's default (written before
// the PubAck, fsync every 2 minutes), "sync=always" is `sync_interval:
// always`, an fsync before each PubAck.
func BenchmarkJetStreamThroughput(b *testing.B) {
	b.Run("sync=default", func(b *testing.B) { benchThroughput(b, false) })
	b.Run("sync=always", func(b *testing.B) { benchThroughput(b, true) })
}

func benchThroughput(b *testing.B, syncAlways bool) {
	const senders, window = 4, 64
	url := startServer(b, syncAlways)
	per := b.N/senders + 1
	total := per * senders
	want := benchutil.Spread(total, len(roles))
	ctx, moved, stop := benchutil.Watchdog(context.Background(), stall)
	defer stop()
	tally := benchutil.NewTally(total)
	errs := make(chan error, len(roles)+senders)
	var received sync.WaitGroup
	for i, r := range roles {
		received.Go(func() {
			errs <- consume(ctx, b, url, r, want[i], func(id string) {
				tally.Delivered(id)
				moved()
			})
		})
	}
	pubs := make([]jetstream.JetStream, senders)
	for s := range pubs {
		_, pubs[s] = connect(b, url, jetstream.WithPublishAsyncMaxPending(2*window))
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), benchutil.ProcessCPU()
	var wg sync.WaitGroup
	for s, js := range pubs {
		slots := make(chan struct{}, window)
		futures := make(chan jetstream.PubAckFuture, window)
		wg.Go(func() { // PubAck reader
			for f := range futures {
				select {
				case a := <-f.Ok():
					if a != nil && !a.Duplicate {
						tally.Acked(f.Msg().Header.Get(jetstream.MsgIDHeader))
					}
				case err := <-f.Err():
					errs <- err
				case <-ctx.Done():
					return
				}
				moved()
				<-slots
			}
		})
		wg.Go(func() { // publisher
			defer close(futures)
			for i := 0; i < per; i++ {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				n := s*per + i
				f, err := js.PublishAsync(subject(roles[n%len(roles)]), body, jetstream.WithMsgID(benchutil.ID(n)))
				if err != nil {
					errs <- err
					return
				}
				futures <- f // never blocks: at most window are out
			}
		})
	}
	wg.Wait()
	received.Wait()
	el, cpu := time.Since(start), benchutil.ProcessCPU()-cpu0
	b.StopTimer()
	stalled := ctx.Err() != nil
	close(errs)
	var firstErr error
	for err := range errs {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	lost := tally.Lost()
	if lost > 0 || stalled || firstErr != nil {
		b.Fatalf("%d of %d messages lost (not PubAcked, missing or duplicated); stalled %v; first error: %v", lost, total, stalled, firstErr)
	}
	b.ReportMetric(float64(total)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(benchutil.Micros(cpu)/float64(total), "cpu-µs/msg")
}
