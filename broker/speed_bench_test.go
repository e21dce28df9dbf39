package broker_test

// The #18 rows of scripts/bench: hm with listeners that acknowledge every
// message (message-ack), measured beside NATS JetStream (internal/jsbench)
// in the same run.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/benchutil"
	"hm/journal"
)

// BenchmarkAckedLatency: one sender, serial send→ACK, to a listener that
// sends message-ack for every message it receives. It reports p50-µs and
// p99-µs of send→ACK and cpu-µs/msg: the process's CPU time over the run
// (broker, ledger and both clients, all in this process) per message.
func BenchmarkAckedLatency(b *testing.B) {
	h := newBenchHarness(b)
	ctx := context.Background()
	listener := h.benchClient(b, "builder", true)
	acked := make(chan error, 1)
	go func() { acked <- ackEach(listener, b.N) }()
	sender := h.benchClient(b, "architect", false)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu0 := benchutil.ProcessCPU()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ack, _, err := sender.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "(ARCH #" + fmt.Sprint(i+1) + "): tests pass", MessageID: fmt.Sprintf("al-%d", i)})
		if err != nil || !ack.OK {
			b.Fatalf("send %d: %v %+v", i, err, ack)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := benchutil.ProcessCPU() - cpu0
	b.StopTimer()
	if err := <-acked; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(benchutil.Micros(percentile(lat, 0.5)), "p50-µs")
	b.ReportMetric(benchutil.Micros(percentile(lat, 0.99)), "p99-µs")
	b.ReportMetric(benchutil.Micros(cpu)/float64(b.N), "cpu-µs/msg")
}

// BenchmarkAckedThroughput: 4 pipelined senders (64 in flight each) → 2
// listeners that acknowledge every message (benchThroughput with ack):
// msgs/s, lost (a lost or duplicated message fails it) and cpu-µs/msg.
// "default" opens the ledger as `hm up` does; "durable" as `hm up
// --durable` does (journal.Options.Durable: synchronous=FULL, an fsync per
// commit).
func BenchmarkAckedThroughput(b *testing.B) {
	b.Run("default", func(b *testing.B) { benchThroughput(b, newBenchHarness(b), 64, true) })
	b.Run("durable", func(b *testing.B) {
		h := newHarnessLedger(b, b.TempDir()+"/bench.db", 1, journal.Options{Durable: true}, noRateLimit)
		benchThroughput(b, h, 64, true)
	})
}

// ackEach reads c's frames and answers every message with message-ack
// until it has acknowledged n, then waits for the hub to have processed
// those acks (awaitHeartbeat).
func ackEach(c *client.Client, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for got := 0; got < n; {
		typ, raw, err := c.Next(ctx)
		if err != nil {
			return fmt.Errorf("listener after %d of %d messages: %w", got, n, err)
		}
		var m proto.Message
		if typ != proto.TypeMessage || json.Unmarshal(raw, &m) != nil {
			continue
		}
		if err := c.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID}); err != nil {
			return err
		}
		got++
	}
	return awaitHeartbeat(ctx, c, "acks")
}
