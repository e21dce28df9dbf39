package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// BenchmarkRawWebSocketRTT is the floor: a coder/websocket echo round trip
// on loopback, no hm code involved.
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
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
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
// every message must be ACKed ok and received exactly once.
func BenchmarkThroughput(b *testing.B) { benchThroughput(b, 64) }

// BenchmarkThroughputSerial is the same with senders that wait for each ACK
// before sending the next message (like hm-send).
func BenchmarkThroughputSerial(b *testing.B) { benchThroughput(b, 1) }

func benchThroughput(b *testing.B, window int) {
	h := newBenchHarness(b)
	ctx := context.Background()
	const senders = 4
	targets := []string{"builder", "oracle"}
	per := b.N/senders + 1
	total := per * senders
	want := make([]int, len(targets))
	for i := 0; i < total; i++ {
		want[i%len(targets)]++
	}
	var received sync.WaitGroup
	counts := make([]int, len(targets))
	dups := make([]int, len(targets))
	for i, role := range targets {
		l := h.benchClient(b, role, true)
		received.Add(1)
		go func(i int, l *client.Client) {
			defer received.Done()
			seen := map[string]bool{}
			for len(seen) < want[i] {
				typ, raw, err := l.Next(ctx)
				if err != nil {
					return
				}
				if typ == "message" {
					var m proto.Message
					if json.Unmarshal(raw, &m) == nil {
						if seen[m.MessageID] {
							dups[i]++
						}
						seen[m.MessageID] = true
					}
				}
			}
			counts[i] = len(seen)
		}(i, l)
	}
	senderRoles := []string{"architect", "user", "user", "user"}
	clients := make([]*client.Client, senders)
	for s := range clients {
		clients[s] = h.benchClient(b, senderRoles[s], false)
	}
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		slots := make(chan struct{}, window)
		acked := make(chan struct{})
		c := clients[s]
		wg.Add(2)
		go func() { // ACK reader
			defer wg.Done()
			defer close(acked)
			for n := 0; n < per; {
				typ, raw, err := c.Next(ctx)
				if err != nil {
					failed.Add(int64(per - n))
					return
				}
				if typ != "send-ack" {
					continue
				}
				n++
				var a proto.Ack
				if json.Unmarshal(raw, &a) != nil || !a.OK {
					failed.Add(1)
				}
				<-slots
			}
		}()
		go func(s int) { // sender
			defer wg.Done()
			for i := 0; i < per; i++ {
				slots <- struct{}{}
				n := s*per + i
				if err := c.WriteJSON(ctx, proto.Frame{Type: "send", Target: targets[n%len(targets)], Content: "load", MessageID: fmt.Sprintf("tp-%08d", n)}); err != nil {
					failed.Add(int64(per - i))
					return
				}
			}
			<-acked
		}(s)
	}
	wg.Wait()
	received.Wait()
	el := time.Since(start)
	b.StopTimer()
	lost := failed.Load()
	for i := range targets {
		lost += int64(want[i]-counts[i]) + int64(dups[i])
	}
	b.ReportMetric(float64(total)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(lost), "lost")
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
