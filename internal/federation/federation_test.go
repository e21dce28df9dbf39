package federation_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"hm/internal/federation"
	"hm/internal/federation/natstest"
	"hm/internal/ground/poll"
)

func connect(t *testing.T, url, hub string) *federation.Client {
	t.Helper()
	return connectAt(t, url, hub, "")
}

// connectAt is connect for a hub serving root.
func connectAt(t *testing.T, url, hub, root string) *federation.Client {
	t.Helper()
	c, err := federation.Connect(federation.Config{URL: url, Team: "alpha", Hub: hub, Root: root, ReconnectWait: 50 * time.Millisecond, PublishTimeout: time.Second, AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// A message published twice with one id (an outbox republish) is stored
// once; a handler error redelivers it; the consumer takes each id once
// after its handler returns nil.
func TestPublishDedupeAndRedeliver(t *testing.T) {
	srv := natstest.Start(t)
	a, b := connect(t, srv.URL(), "hub-a"), connect(t, srv.URL(), "hub-b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m1", "m1", "m2"} {
		if err := a.Publish(ctx, federation.Envelope{MessageID: id, From: "architect", Target: "builder", Content: "(ARCH #1): hi " + id}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]int{}
	failOnce := true
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.Consume(ctx, "builder", func(_ context.Context, e federation.Envelope, progress func()) error {
			progress()
			mu.Lock()
			defer mu.Unlock()
			if e.Hub != "hub-a" {
				t.Errorf("envelope hub %q", e.Hub)
			}
			got[e.MessageID]++
			if e.MessageID == "m2" && failOnce {
				failOnce = false
				return errors.New("not yet")
			}
			return nil
		})
	}()
	poll.For(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got["m1"] != 1 || got["m2"] != 2 {
			return errors.New("deliveries so far: " + fmtCounts(got))
		}
		return nil
	})
	cancel()
	wg.Wait()
}

func fmtCounts(m map[string]int) string {
	s := ""
	for k, v := range m {
		s += k + "=" + string(rune('0'+v)) + " "
	}
	return s
}

// While the server is down, Publish fails at once (the hub queues in its
// ledger); after a restart it works again and Up is signalled.
func TestPublishWhileDown(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "hub-a")
	ctx := context.Background()
	if err := a.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	<-a.Up()
	srv.Stop()
	poll.For(t, 30*time.Second, func() error {
		if a.Connected() {
			return errors.New("still connected")
		}
		return nil
	})
	// ErrDisconnected, not a buffered publish waiting for its PubAck: the
	// hub queues the message in its own ledger instead.
	if err := a.Publish(ctx, federation.Envelope{MessageID: "m1", From: "architect", Target: "builder", Content: "x"}); !errors.Is(err, federation.ErrDisconnected) {
		t.Fatalf("publish while down: %v, want ErrDisconnected", err)
	}
	srv.Restart()
	select {
	case <-a.Up():
	case <-time.After(30 * time.Second):
		t.Fatal("no reconnection")
	}
	poll.For(t, 30*time.Second, func() error {
		return a.Publish(ctx, federation.Envelope{MessageID: "m1", From: "architect", Target: "builder", Content: "x"})
	})
}

// Presence goes from one hub to the other; a hub claiming a role the
// receiver hosts, or one another hub already claims, is refused.
func TestPresenceAndForeignClaims(t *testing.T) {
	srv := natstest.Start(t)
	a, b, evil := connect(t, srv.URL(), "hub-a"), connect(t, srv.URL(), "hub-b"), connect(t, srv.URL(), "evil")
	if err := a.EnsureStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	peers := federation.NewPeers(a.Hub(), func(r string) bool { return r == "architect" }, false, nil, nil)
	var mu sync.Mutex
	var refused []error
	stop, err := a.WatchPresence(func(p federation.Presence, err error) {
		if err == nil {
			err = peers.Accept(p)
		}
		if err != nil {
			mu.Lock()
			refused = append(refused, err)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := b.PublishPresence([]federation.RoleState{{Role: "builder", State: "idle"}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		if p, ok := peers.Host("builder"); !ok || p.Hub != "hub-b" || p.State != "idle" {
			return errors.New("builder not seen on hub-b")
		}
		return nil
	})
	if err := evil.PublishPresence([]federation.RoleState{{Role: "architect", State: "idle"}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := evil.PublishPresence([]federation.RoleState{{Role: "builder", State: "idle"}, {Role: "oracle", State: "idle"}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(refused) < 2 {
			return errors.New("claims not refused yet")
		}
		for _, e := range refused {
			if !errors.Is(e, federation.ErrForeignClaim) {
				return e
			}
		}
		return nil
	})
	if p, _ := peers.Host("builder"); p.Hub != "hub-b" {
		t.Fatalf("builder now on %q", p.Hub)
	}
	if _, ok := peers.Host("oracle"); ok {
		t.Fatal("a refused presence's other roles were taken")
	}
}

// Presence signed with a user nkey verifies; a forged or unsigned one does
// not, and a table that requires signatures refuses it.
func TestPresenceSignature(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	p := federation.Presence{Hub: pub, Roles: []federation.RoleState{{Role: "builder", State: "idle"}}, AtMs: 1, TTLMs: 1000}
	if err := p.Sign(kp); err != nil {
		t.Fatal(err)
	}
	if !p.Signed() {
		t.Fatal("signed presence does not verify")
	}
	now := time.UnixMilli(1)
	peers := federation.NewPeers("self", nil, true, nil, func() time.Time { return now })
	if err := peers.Accept(p); err != nil {
		t.Fatal(err)
	}
	forged := p
	forged.Roles = []federation.RoleState{{Role: "oracle", State: "idle"}}
	if forged.Signed() {
		t.Fatal("a changed presence still verifies")
	}
	if err := peers.Accept(forged); !errors.Is(err, federation.ErrUnsigned) {
		t.Fatalf("forged: %v", err)
	}
	other, _ := nkeys.CreateUser()
	q := federation.Presence{Hub: "plain", Roles: []federation.RoleState{{Role: "oracle"}}, AtMs: 1, TTLMs: 1000}
	if err := q.Sign(other); err == nil {
		t.Fatal("signed a presence with another hub's key")
	}
	if err := peers.Accept(q); !errors.Is(err, federation.ErrUnsigned) {
		t.Fatalf("unsigned: %v", err)
	}
	// Expiry: a presence past its TTL hosts nothing.
	now = now.Add(2 * time.Second)
	if _, ok := peers.Host("builder"); ok {
		t.Fatal("expired presence still hosts builder")
	}
}

// An envelope signed by its hub's user nkey is authentic; one changed after
// signing, signed by another key, with a malformed signature, or (when
// signatures are required) unsigned, is not.
func TestEnvelopeSignature(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	other, _ := nkeys.CreateUser()
	signed := func(e federation.Envelope, with nkeys.KeyPair) federation.Envelope {
		t.Helper()
		e.Hub = pub
		if err := e.Sign(with); err != nil {
			t.Fatal(err)
		}
		return e
	}
	base := federation.Envelope{MessageID: "m-1", Hub: pub, From: "architect", Target: "builder", Seq: 3, Header: "ARCH", Content: "(ARCH #3): ship it"}
	good := signed(base, kp)
	changed := good
	changed.Content = "(ARCH #3): delete the repo"
	badB64 := good
	badB64.Sig = "!!!"
	otherHub := good
	otherHub.Hub = "hub-a" // not a user key: nothing verifies against it
	for _, tc := range []struct {
		name       string
		e          federation.Envelope
		requireSig bool
		ok         bool
	}{
		{"signed", good, true, true},
		{"signed, not required", good, false, true},
		{"changed after signing", changed, true, false},
		{"changed, not required", changed, false, false},
		{"malformed signature", badB64, false, false},
		{"names another hub", otherHub, false, false},
		{"unsigned, required", base, true, false},
		{"unsigned, not required", base, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What crosses the wire is the JSON: check the parsed copy.
			data, err := tc.e.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			e, err := federation.ParseEnvelope(data)
			if err != nil {
				t.Fatal(err)
			}
			err = e.Authentic(tc.requireSig)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, federation.ErrForged)) {
				t.Fatalf("Authentic(%v) = %v, want ok=%v", tc.requireSig, err, tc.ok)
			}
		})
	}
	if e := base; e.Sign(other) == nil {
		t.Fatal("signed an envelope naming one hub with another hub's key")
	}
}

// A presence captured earlier cannot keep its hub alive: one older than
// the latest accepted from that hub is refused, the same one again does
// not extend its life, and one that ended more than MaxPresenceSkew ago is
// refused (a receiver that restarted remembers nothing).
func TestPresenceReplay(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	start := time.UnixMilli(1_700_000_000_000)
	presence := func(at time.Time) federation.Presence {
		t.Helper()
		p := federation.Presence{Hub: pub, Roles: []federation.RoleState{{Role: "builder", State: "idle"}}, AtMs: at.UnixMilli(), TTLMs: 15_000}
		if err := p.Sign(kp); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := presence(start), presence(start.Add(5*time.Second))
	now := start
	peers := federation.NewPeers("self", nil, true, nil, func() time.Time { return now })
	for _, step := range []struct {
		name    string
		after   time.Duration // since start
		p       federation.Presence
		refused bool
		live    bool // builder hosted right after the step
	}{
		{"first", 0, first, false, true},
		{"newer", 5 * time.Second, second, false, true},
		{"older replayed", 6 * time.Second, first, true, true},
		{"same again", 18 * time.Second, second, false, true},
		{"same again does not extend", 21 * time.Second, second, false, false},
	} {
		now = start.Add(step.after)
		err := peers.Accept(step.p)
		if step.refused != (err != nil) || (err != nil && !errors.Is(err, federation.ErrStalePresence)) {
			t.Fatalf("%s: Accept = %v, want refused=%v", step.name, err, step.refused)
		}
		if _, ok := peers.Host("builder"); ok != step.live {
			t.Fatalf("%s: builder hosted = %v, want %v", step.name, ok, step.live)
		}
	}
	// A receiver that starts later takes a recent presence, not one whose
	// end is more than MaxPresenceSkew behind its clock.
	fresh := federation.NewPeers("self", nil, true, nil, func() time.Time { return now })
	now = start.Add(20*time.Second + federation.MaxPresenceSkew + time.Second)
	if err := fresh.Accept(second); !errors.Is(err, federation.ErrStalePresence) {
		t.Fatalf("stale presence: %v", err)
	}
	now = start.Add(20*time.Second + federation.MaxPresenceSkew - time.Second)
	if err := fresh.Accept(second); err != nil {
		t.Fatalf("presence within the skew: %v", err)
	}
}
