package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/benchutil"
)

func percentile(d []time.Duration, p float64) time.Duration { return benchutil.Percentile(d, p) }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// BenchmarkRawWebSocketRTT is the floor: a coder/websocket echo round trip
// on loopback, no hm code involved. Its msgs/s is the rate of serial round
// trips (1/RTT), not a one-way rate: see BenchmarkRawWebSocketOneWay.
func BenchmarkRawWebSocketRTT(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, data); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	msg := []byte(`{"type":"send","target":"builder","content":"(ARCH #1): tests pass"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(float64(b.N)/el.Seconds(), "round-trips/s")
}

// BenchmarkRawWebSocketOneWay is the floor for streaming: one
// coder/websocket client writes b.N messages back to back on loopback
// while the server reads them; the clock stops when the server has read
// the last one (it then writes one reply). No hm code involved.
func BenchmarkRawWebSocketOneWay(b *testing.B) {
	n := b.N
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for range n {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
		_ = c.Write(r.Context(), websocket.MessageText, []byte("done"))
		_, _, _ = c.Read(r.Context()) // until the client closes
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	msg := []byte(`{"type":"send","target":"builder","content":"(ARCH #1): tests pass"}`)
	b.ResetTimer()
	start := time.Now()
	for range n {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
	}
	if _, data, err := c.Read(ctx); err != nil || string(data) != "done" {
		b.Fatalf("server did not read every message: %q, %v", data, err)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "msgs/s")
}

// BenchmarkSendAck measures send→ACK to a listener with the ledger on.
func BenchmarkSendAck(b *testing.B) {
	h := newBenchHarness(b)
	ctx := context.Background()
	listener := h.benchClient(b, "builder", true)
	go drain(listener)
	sender := h.benchClient(b, "architect", false)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ack, _, err := sender.Send(ctx, proto.Frame{Type: "send", Target: "builder", Content: "(ARCH #" + fmt.Sprint(i+1) + "): tests pass", MessageID: fmt.Sprintf("ba-%d", i)})
		if err != nil || !ack.OK {
			b.Fatalf("send %d: %v %+v", i, err, ack)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}

// BenchmarkThroughput: 4 concurrent senders streaming with up to 64
// messages in flight each (ACKs read by a second goroutine), 2 listeners;
// every message must be ACKed ok and received exactly once. A message that
// never arrives (or whose ACK never does) is reported as lost once nothing
// has moved for throughputStall, instead of hanging the benchmark.
func BenchmarkThroughput(b *testing.B) { benchThroughput(b, newBenchHarness(b), 64, false) }

// BenchmarkThroughputSerial is the same with senders that wait for each ACK
// before sending the next message (like hm-send).
func BenchmarkThroughputSerial(b *testing.B) { benchThroughput(b, newBenchHarness(b), 1, false) }

// throughputStall is how long benchThroughput waits without any ACK or
// delivery before it counts what is still missing as lost.
const throughputStall = 5 * time.Second

// benchThroughput streams b.N messages from 4 senders (window in flight
// each) to 2 listeners of h and reports msgs/s, lost (not ACKed ok,
// missing or duplicated) and cpu-µs/msg: the process's CPU time (user +
// system, getrusage) over the run divided by the messages; the broker, the
// ledger and every client run in this process, so it is the whole
// system's CPU. With ack, each listener sends message-ack for every message
// it receives and, after its last, a heartbeat whose reply means the hub
// has committed those acks (awaitHeartbeat); the clock stops at that
// reply, and a lost message fails the benchmark.
func benchThroughput(b *testing.B, h *harness, window int, ack bool) {
	const senders = 4
	targets := []string{"builder", "oracle"}
	per := b.N/senders + 1
	total := per * senders
	want := benchutil.Spread(total, len(targets))
	// ctx ends when nothing has moved for throughputStall: every read
	// then fails and whatever did not arrive counts as lost.
	ctx, moved, stop := benchutil.Watchdog(context.Background(), throughputStall)
	defer stop()
	tally := benchutil.NewTally(total)
	var acksConfirmed atomic.Int32 // listeners whose acks the hub has processed
	var received sync.WaitGroup
	for i, role := range targets {
		l := h.benchClient(b, role, true)
		received.Add(1)
		go func(i int, l *client.Client) {
			defer received.Done()
			for got := 0; got < want[i]; {
				typ, raw, err := l.Next(ctx)
				if err != nil {
					return
				}
				var m proto.Message
				if typ != proto.TypeMessage || json.Unmarshal(raw, &m) != nil {
					continue
				}
				if ack {
					if err := l.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID}); err != nil {
						return
					}
				}
				if tally.Delivered(m.MessageID) {
					got++
					moved()
				}
			}
			if ack && awaitHeartbeat(ctx, l, "tp-acks") == nil {
				acksConfirmed.Add(1)
			}
		}(i, l)
	}
	senderRoles := []string{"architect", "user", "user", "user"}
	clients := make([]*client.Client, senders)
	for s := range clients {
		clients[s] = h.benchClient(b, senderRoles[s], false)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), benchutil.ProcessCPU()
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		slots := make(chan struct{}, window)
		c := clients[s]
		wg.Add(2)
		go func() { // ACK reader
			defer wg.Done()
			for n := 0; n < per; {
				typ, raw, err := c.Next(ctx)
				if err != nil {
					return
				}
				if typ != proto.TypeSendAck {
					continue
				}
				n++
				moved()
				var a proto.Ack
				if json.Unmarshal(raw, &a) == nil && a.OK {
					tally.Acked(a.MessageID)
				}
				<-slots
			}
		}()
		go func(s int) { // sender
			defer wg.Done()
			for i := 0; i < per; i++ {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				n := s*per + i
				if err := c.WriteJSON(ctx, proto.Frame{Type: "send", Target: targets[n%len(targets)], Content: "load", MessageID: benchutil.ID(n)}); err != nil {
					return
				}
			}
		}(s)
	}
	wg.Wait()
	received.Wait()
	el, cpu := time.Since(start), benchutil.ProcessCPU()-cpu0
	b.StopTimer()
	stalled := ctx.Err() != nil
	lost := tally.Lost() // not ACKed ok, missing or duplicated
	if lost > 0 || stalled {
		b.Logf("%d of %d messages lost (not ACKed ok, missing or duplicated); stalled %v (nothing moved for %v)", lost, total, stalled, throughputStall)
	}
	if ack && (lost > 0 || int(acksConfirmed.Load()) != len(targets)) {
		b.Fatalf("%d of %d messages lost; %d of %d listeners had their acks confirmed", lost, total, acksConfirmed.Load(), len(targets))
	}
	b.ReportMetric(float64(total)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(benchutil.Micros(cpu)/float64(total), "cpu-µs/msg")
}

// awaitHeartbeat sends a heartbeat with requestID on c and reads frames
// until its heartbeat-ack. The hub handles a connection's frames in order
// and answers any frame other than send, broadcast and message-ack only
// once that connection's earlier message-acks are committed (frames.go),
// so the reply means every ack c sent before is in the ledger.
func awaitHeartbeat(ctx context.Context, c *client.Client, requestID string) error {
	if err := c.WriteJSON(ctx, proto.Frame{Type: proto.TypeHeartbeat, RequestID: requestID}); err != nil {
		return err
	}
	_, err := c.Await(ctx, proto.TypeHeartbeatAck, requestID, "")
	return err
}

func drain(c *client.Client) {
	for {
		if _, _, err := c.Next(context.Background()); err != nil {
			return
		}
	}
}

func newBenchHarness(b *testing.B) *harness {
	b.Helper()
	return newHarnessAt(b, b.TempDir()+"/bench.db", 1, func(c *broker.Config, _ *broker.Deps) { c.RateLimit = 0 })
}

func (h *harness) benchClient(b *testing.B, role string, listen bool) *client.Client {
	b.Helper()
	ctx := context.Background()
	c, err := client.Dial(ctx, h.url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.CloseNow() })
	tok := operatorToken
	if role != "user" {
		tok = h.tokens.Issue(role)
	}
	if _, err := c.Register(ctx, role, tok, listen); err != nil {
		b.Fatal(err)
	}
	return c
}
