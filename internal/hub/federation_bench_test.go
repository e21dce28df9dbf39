package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/federation/natstest"
	"hm/internal/ground/benchutil"
	"hm/internal/ground/layout"
	"hm/internal/ground/promptlog"
	"hm/internal/ground/status"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// fedBench is two in-process hubs joined through an embedded nats-server
// (JetStream, file store in a temp dir): hub A hosts architect, hub B
// builder, each in a fake-agent pane; arch is a client of hub A as
// architect.
type fedBench struct {
	a, b  *hub.Hub
	rootB string
	arch  *client.Client
}

// fedBenchSettings is fedSettings with the short quiet period the e2e
// kill -9 tests use (the fake agent draws no CLI's screen).
func fedBenchSettings(root, local, remote string) string {
	return fmt.Sprintf(`{"profiles":{"claude":{"quietMs":80,"ready":[">"]}},"panes":[
	 {"role":%q,"command":%q,"profile":"claude"},
	 {"role":%q,"transport":"remote"},
	 {"role":"oracle","transport":"ws"}],
	 "background":{"max":0}}`, local, agentCmd(root, local), remote)
}

func startFedBench(b *testing.B) *fedBench {
	b.Helper()
	srv := natstest.Start(b)
	start := func(name, local, remote string) (*hub.Hub, string) {
		root := b.TempDir()
		lay := layout.Layout{Root: root}
		if err := lay.Ensure(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(lay.Settings(), []byte(fedBenchSettings(root, local, remote)), 0o600); err != nil {
			b.Fatal(err)
		}
		h, _ := hubtest.Start(b, root, hub.Options{RateLimit: 0, NATS: hub.NATSOptions{URL: srv.URL(), Team: fedTeam, Hub: name,
			PresenceEvery: 200 * time.Millisecond, OutboxEvery: 200 * time.Millisecond, ReconnectWait: 50 * time.Millisecond}})
		return h, root
	}
	f := &fedBench{}
	f.a, _ = start("hub-a", "architect", "builder")
	f.b, f.rootB = start("hub-b", "builder", "architect")
	deadline := time.Now().Add(15 * time.Second)
	for !seesHub(f.a, "builder", "hub-b") || !seesHub(f.b, "architect", "hub-a") {
		if time.Now().After(deadline) {
			b.Fatalf("presence: a sees %v, b sees %v", f.a.RemotePanes(), f.b.RemotePanes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx := context.Background()
	c, err := client.Dial(ctx, f.a.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.CloseNow() })
	tok, err := layout.Layout{Root: f.a.Layout.Root}.ReadToken()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Register(ctx, "architect", tok, false); err != nil {
		b.Fatal(err)
	}
	f.arch = c
	// A first message, typed before the clock starts: builder's pane is
	// up and past its session message.
	f.send(b, "warm-up")
	f.waitTyped(b, "warm-up", time.Minute)
	return f
}

func seesHub(h *hub.Hub, role, hubName string) bool {
	for _, p := range h.RemotePanes() {
		if p.Role == role && p.Hub == hubName {
			return true
		}
	}
	return false
}

// send sends id to builder and returns when hub A ACKed it ok.
func (f *fedBench) send(b *testing.B, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ack, _, err := f.arch.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: "bench " + id})
	if err != nil || !ack.OK || ack.Status != string(status.AcceptedUnverified) {
		b.Fatalf("send %s: %+v %v", id, ack, err)
	}
}

// typed reports whether hub B's ledger shows id typed into builder.
func (f *fedBench) typed(id string) bool {
	m, err := f.b.Ledger.Get(context.Background(), id)
	return err == nil && m.AckStatus.Rank() >= status.Typed.Rank() && m.Status.Rank() < status.Failed.Rank()
}

// waitTyped polls hub B's ledger every 200 µs until id is typed.
func (f *fedBench) waitTyped(b *testing.B, id string, d time.Duration) {
	deadline := time.Now().Add(d)
	for !f.typed(id) {
		if time.Now().After(deadline) {
			m, _ := f.b.Ledger.Get(context.Background(), id)
			b.Fatalf("%s not typed into builder after %v: %+v", id, d, m)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// BenchmarkFederation measures a message from hub A's architect to builder
// on hub B (docs/protocol.md §16): SendAck, send → ACK (ledger commit and
// JetStream PubAck); SendTyped, send → hub B's ledger shows it typed into
// the fake agent (one message at a time); Throughput, b.N messages sent
// back to back → all typed into the pane, and those not in the fake
// agent's own prompt log exactly once (lost).
func BenchmarkFederation(b *testing.B) {
	b.Run("SendAck", func(b *testing.B) {
		f := startFedBench(b)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			t0 := time.Now()
			f.send(b, fmt.Sprintf("ack-%06d", i))
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportFedLatency(b, lat)
	})
	b.Run("SendTyped", func(b *testing.B) {
		f := startFedBench(b)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			id := fmt.Sprintf("typed-%06d", i)
			t0 := time.Now()
			f.send(b, id)
			f.waitTyped(b, id, time.Minute)
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportFedLatency(b, lat)
	})
	b.Run("Throughput", func(b *testing.B) {
		f := startFedBench(b)
		ids := make([]string, b.N)
		for i := range ids {
			ids[i] = benchutil.ID(i)
		}
		b.ResetTimer()
		t0 := time.Now()
		for _, id := range ids {
			f.send(b, id)
		}
		for _, id := range ids {
			f.waitTyped(b, id, 5*time.Minute)
		}
		el := time.Since(t0)
		b.StopTimer()
		b.ReportMetric(float64(len(ids))/el.Seconds(), "msgs/s")
		b.ReportMetric(float64(fedLost(b, filepath.Join(f.rootB, "builder.jsonl"), ids)), "lost")
	})
}

func reportFedLatency(b *testing.B, lat []time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	b.ReportMetric(ms(benchutil.Percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(benchutil.Percentile(lat, 0.99)), "p99-ms")
}

// fedLost waits (10 s at most) until every id is in the prompt log and
// counts those that are missing or there more than once.
func fedLost(b *testing.B, path string, ids []string) int {
	var counts map[string]int
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := promptlog.Read(path)
		if err != nil {
			b.Fatal(err)
		}
		counts = map[string]int{}
		for _, p := range ps {
			for _, m := range fedMarkerRE.FindAllStringSubmatch(p.Full(), -1) {
				counts[m[1]]++
			}
		}
		missing := 0
		for _, id := range ids {
			if counts[id] == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	lost := 0
	for _, id := range ids {
		if counts[id] != 1 {
			lost++
		}
	}
	return lost
}
