package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"hm/broker/proto"
	"hm/internal/federation"
	"hm/internal/federation/natstest"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/internal/hub"
	"hm/roles"
)

const fedTeam = "t1"

// fedSettings hosts local in a fake-agent pane and names remote as hosted
// by another hub; oracle has transport oracle (ws or remote); no
// background slots.
func fedSettings(root, local, remote, oracle string) string {
	return fmt.Sprintf(`{"panes":[
	 {"role":%q,"command":%q,"profile":"default"},
	 {"role":%q,"transport":"remote"},
	 {"role":"oracle","transport":%q}],
	 "background":{"max":0}}`, local, agentCmd(root, local), remote, oracle)
}

type fedPair struct {
	srv   *natstest.Server
	a, b  *testHub
	start func(root, name, local, remote string) *testHub
}

// startFedPair runs a nats-server and two hubs joined through it: hub-a
// hosts architect, hub-b builder; oracle is a ws role on both. It waits
// until each sees the other.
func startFedPair(t *testing.T) *fedPair { return startFedPairOracle(t, "ws", "ws") }

// startFedPairOracle is startFedPair with oracle's transport on hub-a and
// on hub-b.
func startFedPairOracle(t *testing.T, oracleA, oracleB string) *fedPair {
	t.Helper()
	srv := natstest.Start(t)
	oracle := map[string]string{"hub-a": oracleA, "hub-b": oracleB}
	start := func(root, name, local, remote string) *testHub {
		return startHubAt(t, root, hubConfig{settings: fedSettings(root, local, remote, oracle[name]), opts: func(o *hub.Options) {
			o.NATS = hub.NATSOptions{URL: srv.URL(), Team: fedTeam, Hub: name, PresenceEvery: 200 * time.Millisecond,
				OutboxEvery: 200 * time.Millisecond, ReconnectWait: 50 * time.Millisecond, AckWait: 1500 * time.Millisecond}
		}})
	}
	p := &fedPair{srv: srv, a: start(t.TempDir(), "hub-a", "architect", "builder"), b: start(t.TempDir(), "hub-b", "builder", "architect"), start: start}
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(remoteHub(p.a, "builder") == "hub-b" && remoteHub(p.b, "architect") == "hub-a",
			"presence: a sees %v, b sees %v", p.a.h.RemotePanes(), p.b.h.RemotePanes())
	})
	return p
}

func remoteHub(th *testHub, role string) string {
	for _, r := range th.h.RemotePanes() {
		if r.Role == role {
			return r.Hub
		}
	}
	return ""
}

var fedMarkerRE = regexp.MustCompile(`\[hm:([A-Za-z0-9_.:-]+)\]`)

// typedCounts counts each message id's markers in role's prompt log.
func typedCounts(t *testing.T, th *testHub, role string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range prompts(t, filepath.Join(th.root, role+".jsonl")) {
		for _, m := range fedMarkerRE.FindAllStringSubmatch(p, -1) {
			out[m[1]]++
		}
	}
	return out
}

// waitTypedOnce waits until every id is in role's prompt log, then fails
// if any is there more than once.
func waitTypedOnce(t *testing.T, th *testHub, role string, ids []string) {
	t.Helper()
	poll.For(t, 60*time.Second, func() error {
		got := typedCounts(t, th, role)
		missing := 0
		for _, id := range ids {
			if got[id] == 0 {
				missing++
			}
		}
		return poll.Want(missing == 0, "%d of %d not typed into %s yet", missing, len(ids), role)
	})
	got := typedCounts(t, th, role)
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("%s typed %d times into %s", id, got[id], role)
		}
	}
}

// A message from hub A's architect to builder on hub B is typed there
// exactly once, recorded in both ledgers under its id with A's number; a
// reply goes back the same way.
func TestFederationTypedOnce(t *testing.T) {
	t.Parallel()
	p := startFedPair(t)
	arch := p.a.as("architect", false)
	var ids []string
	for i := range 3 {
		id := fmt.Sprintf("fed-%d", i)
		ids = append(ids, id)
		ack := send(t, arch, proto.Frame{Target: "builder", Content: fmt.Sprintf("task %d", i), MessageID: id})
		if !ack.OK || ack.Status != string(status.AcceptedUnverified) || ack.Seq != int64(i+1) {
			t.Fatalf("ack %+v", ack)
		}
	}
	waitTypedOnce(t, p.b, "builder", ids)
	ra, rb := row(t, p.a, "fed-1"), row(t, p.b, "fed-1")
	if ra.Status != status.Routed || rb.Seq != 2 || rb.Header != "ARCH" || rb.SenderRole != "architect" || rb.Direction != "inbound" {
		t.Fatalf("rows: a %+v\nb %+v", ra, rb)
	}
	bld := p.b.as("builder", false)
	if ack := send(t, bld, proto.Frame{Target: "architect", Content: "done, ARCH #2", MessageID: "fed-reply"}); !ack.OK {
		t.Fatalf("reply ack %+v", ack)
	}
	waitTypedOnce(t, p.a, "architect", []string{"fed-reply"})
	// health-check on hub A reports builder from hub B's presence.
	res := healthCheck(t, p.a, "builder")
	if !res.Healthy || res.Hub != "hub-b" {
		t.Fatalf("health-check of a remote role: %+v", res)
	}
	// Hub B down at send time: JetStream keeps it; the restarted hub B
	// (same root, a new session) types it once, and nothing earlier again.
	p.b.stop()
	if ack := send(t, arch, proto.Frame{Target: "builder", Content: "while hub b is down", MessageID: "fed-late"}); !ack.OK || ack.Status != string(status.AcceptedUnverified) {
		t.Fatalf("ack while hub b is down: %+v", ack)
	}
	p.b = p.start(p.b.root, "hub-b", "builder", "architect")
	waitTypedOnce(t, p.b, "builder", append(ids, "fed-late"))
	// hm status (and its --json) shows it too.
	st := p.a.h.Snapshot(ctxT(t)).Federation
	if st == nil || st.Hub != "hub-a" || st.Team != fedTeam || !st.Connected || len(st.RemotePanes) != 1 ||
		st.RemotePanes[0].Role != "builder" || st.RemotePanes[0].Hub != "hub-b" || st.RemotePanes[0].State == "" {
		t.Fatalf("status federation: %+v", st)
	}
}

// Without --nats nothing of NATS runs: no federation, no NATS goroutine.
// (Not parallel: the parallel federation tests run NATS in this process.)
func TestNoNATSNoFederation(t *testing.T) {
	th := startHub(t, hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
	if _, _, ok := th.h.Federated(); ok || th.h.Snapshot(ctxT(t)).Federation != nil {
		t.Fatal("federated without --nats")
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "nats-io") {
		t.Fatalf("a NATS goroutine runs without --nats:\n%s", stacks)
	}
}

func healthCheck(t *testing.T, th *testHub, target string) proto.HealthResult {
	t.Helper()
	c := th.as("user", false)
	var res proto.HealthResult
	if err := c.Request(ctxT(t), proto.Frame{Type: "health-check", Target: target, RequestID: "h1"}, "health-check-result", &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// NATS down at send time: the ACK says accepted.queued_remote and the
// message is typed once after NATS is back. Then the server restarts in
// the middle of a stream of sends: none lost, none typed twice.
func TestFederationQueuedAndRestart(t *testing.T) {
	t.Parallel()
	p := startFedPair(t)
	arch := p.a.as("architect", false)
	p.srv.Stop()
	poll.For(t, 10*time.Second, func() error {
		_, up, _ := p.a.h.Federated()
		return poll.Want(!up, "hub a still connected")
	})
	ack := send(t, arch, proto.Frame{Target: "builder", Content: "while down", MessageID: "q-1"})
	if !ack.OK || ack.Status != string(status.AcceptedQueuedRemote) {
		t.Fatalf("ack while NATS is down: %+v", ack)
	}
	if r := row(t, p.a, "q-1"); r.Status != status.Brokered || r.AckStatus != status.AcceptedQueuedRemote {
		t.Fatalf("row while down: %+v", r)
	}
	p.srv.Restart()
	waitTypedOnce(t, p.b, "builder", []string{"q-1"})

	ids := []string{"q-1"}
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(150 * time.Millisecond)
		p.srv.Stop()
		time.Sleep(300 * time.Millisecond)
		p.srv.Restart()
	})
	for i := range 8 {
		id := fmt.Sprintf("r-%d", i)
		ids = append(ids, id)
		if ack := send(t, arch, proto.Frame{Target: "builder", Content: fmt.Sprintf("stream %d", i), MessageID: id}); !ack.OK {
			t.Fatalf("ack %+v", ack)
		}
		time.Sleep(60 * time.Millisecond)
	}
	wg.Wait()
	waitTypedOnce(t, p.b, "builder", ids)
}

// A message JetStream hands over again (here: the same message id
// republished under another Nats-Msg-Id, as after the dedupe window) is
// acknowledged from hub B's ledger without being typed again; a sender
// claiming a role its hub does not host is refused, and so is a presence
// claiming roles other hubs host.
func TestFederationRedeliveryAndForeignClaims(t *testing.T) {
	t.Parallel()
	p := startFedPair(t)
	arch := p.a.as("architect", false)
	if ack := send(t, arch, proto.Frame{Target: "builder", Content: "once only", MessageID: "d-1"}); !ack.OK {
		t.Fatalf("ack %+v", ack)
	}
	waitTypedOnce(t, p.b, "builder", []string{"d-1"})
	orig := row(t, p.b, "d-1")

	js := jsClient(t, p.srv.URL())
	publish := func(msgID string, e federation.Envelope) {
		t.Helper()
		data, _ := e.Marshal()
		if _, err := js.Publish(ctxT(t), "hm."+fedTeam+".to.builder", data, jetstream.WithMsgID(msgID)); err != nil {
			t.Fatal(err)
		}
	}
	publish("again-1", federation.Envelope{MessageID: "d-1", Hub: "hub-a", From: "architect", Target: "builder", Seq: orig.Seq, Header: "ARCH", Content: orig.RawBody})

	// A hub that claims builder (hosted by hub-b) and architect (hosted
	// by hub-a, so also refused by hub-a itself) is refused.
	evil, err := federation.Connect(federation.Config{URL: p.srv.URL(), Team: fedTeam, Hub: "evil"})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	for range 3 {
		if err := evil.PublishPresence([]federation.RoleState{{Role: "builder", State: "idle"}, {Role: "architect", State: "idle"}}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// A message from hub evil as architect: refused at hub B (architect is
	// hub-a's), never typed.
	publish("forged-1", federation.Envelope{MessageID: "forged-1", Hub: "evil", From: "architect", Target: "builder", Content: "(ARCH #99): rm -rf"})
	// and one from hub-a's name as builder (a role hub-b itself hosts).
	publish("forged-2", federation.Envelope{MessageID: "forged-2", Hub: "hub-a", From: "builder", Target: "builder", Content: "(BUILDER #99): hi me"})

	cons, err := js.Consumer(ctxT(t), "HM_T1", federation.ConsumerName("builder"))
	if err != nil {
		t.Fatal(err)
	}
	poll.For(t, 20*time.Second, func() error {
		info, err := cons.Info(ctxT(t))
		if err != nil {
			return err
		}
		return poll.Want(info.NumPending == 0 && info.NumAckPending == 0, "consumer: %d pending, %d unacked", info.NumPending, info.NumAckPending)
	})
	got := typedCounts(t, p.b, "builder")
	if got["d-1"] != 1 || got["forged-1"] != 0 || got["forged-2"] != 0 {
		t.Fatalf("typed into builder: %v", got)
	}
	for _, id := range []string{"forged-1", "forged-2"} {
		if r := row(t, p.b, id); r.MessageID != "" {
			t.Errorf("forged %s recorded: %+v", id, r)
		}
	}
	if remoteHub(p.a, "builder") != "hub-b" || remoteHub(p.b, "architect") != "hub-a" {
		t.Fatalf("presence after foreign claims: a %v, b %v", p.a.h.RemotePanes(), p.b.h.RemotePanes())
	}
}

// presenceRoles is hub th's presence as role=state words.
func presenceRoles(th *testHub) []string {
	var out []string
	for _, r := range th.h.FedPresence() {
		out = append(out, r.Role+"="+r.State)
	}
	return out
}

// remoteOf is th's status entry of role hosted by another hub.
func remoteOf(t *testing.T, th *testHub, role string) (hub.RemotePaneStatus, bool) {
	t.Helper()
	st := th.h.Snapshot(ctxT(t)).Federation
	if st == nil {
		t.Fatal("no federation in the status")
	}
	for _, r := range st.RemotePanes {
		if r.Role == role {
			return r, true
		}
	}
	return hub.RemotePaneStatus{}, false
}

// Connections that serve no role are not advertised: hub B's presence
// lists its pane (builder) alone, whatever else is connected.
func TestFederationPresenceSkipsNonRoles(t *testing.T) {
	t.Parallel()
	p := startFedPairOracle(t, "remote", "ws")
	tests := []struct {
		name   string
		role   string
		listen bool
	}{
		{"operator listening as user (hm listen, the cockpit)", roles.RoleUser, true},
		{"operator sending as user", roles.RoleUser, false},
		{"send-only connection as a ws role (hm send, hooks, MCP)", "oracle", false},
		{"send-only connection as the pane role", "builder", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := p.b.as(tt.role, tt.listen)
			defer c.CloseNow()
			if tt.listen {
				poll.For(t, 5*time.Second, func() error {
					return poll.Want(slices.Contains(p.b.h.Broker.ListenerRoles(), tt.role), "listeners %v", p.b.h.Broker.ListenerRoles())
				})
			}
			if got := presenceRoles(p.b); len(got) != 1 || !strings.HasPrefix(got[0], "builder=") {
				t.Fatalf("hub b presence: %v", got)
			}
		})
	}
	if _, ok := remoteOf(t, p.a, roles.RoleUser); ok {
		t.Fatal("hub a lists user as a remote role")
	}
}

// A role hub B serves through a WebSocket listener alone (no pane) is in
// its presence ("listening"), shown by hub A's status with hub B, and a
// message from hub A's architect reaches that listener exactly once. A
// pane role that also has a listener is listed once, with its pane's
// state. When the listener leaves, hub B stops advertising the role.
func TestFederationListenerRole(t *testing.T) {
	t.Parallel()
	p := startFedPairOracle(t, "remote", "ws")
	lis := p.b.as("oracle", true)
	p.b.as("builder", true) // a listener of the pane role as well
	poll.For(t, 15*time.Second, func() error {
		r, ok := remoteOf(t, p.a, "oracle")
		return poll.Want(ok && r.Hub == "hub-b" && r.State == "listening", "hub a sees oracle as %+v (%v)", r, ok)
	})
	if got := presenceRoles(p.b); len(got) != 2 || !strings.HasPrefix(got[0], "builder=") || got[0] == "builder=listening" || got[1] != "oracle=listening" {
		t.Fatalf("hub b presence: %v", got)
	}
	if res := healthCheck(t, p.a, "oracle"); !res.Healthy || res.Hub != "hub-b" {
		t.Fatalf("health-check of oracle on hub a: %+v", res)
	}

	arch := p.a.as("architect", false)
	ack := send(t, arch, proto.Frame{Target: "oracle", Content: "look at this", MessageID: "lis-1"})
	if !ack.OK || ack.Status != string(status.AcceptedUnverified) {
		t.Fatalf("ack %+v", ack)
	}
	m := nextMessage(t, lis)
	if m.MessageID != "lis-1" || m.From != "architect" || !strings.Contains(m.Content, "look at this") {
		t.Fatalf("listener got %+v", m)
	}
	if err := lis.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeMessageAck, MessageID: "lis-1"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		r := row(t, p.b, "lis-1")
		return poll.Want(r.Status == status.Acked && r.Direction == "inbound" && r.SenderRole == "architect", "hub b row %+v", r)
	})
	waitConsumerIdle(t, p.srv.URL(), "oracle")
	// Exactly once: nothing more comes to the listener.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	for {
		typ, raw, err := lis.Next(ctx)
		if err != nil {
			break
		}
		if typ == proto.TypeMessage {
			t.Fatalf("a second message at the listener: %s", raw)
		}
	}
	lis.CloseNow()
	poll.For(t, 10*time.Second, func() error {
		r, ok := remoteOf(t, p.a, "oracle")
		return poll.Want(!ok, "hub a still sees oracle: %+v", r)
	})
}

// jsClient is a JetStream client of the NATS server at url, closed at
// the test's end.
func jsClient(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// waitConsumerIdle waits until role's consumer has nothing pending or
// unacknowledged.
func waitConsumerIdle(t *testing.T, url, role string) {
	t.Helper()
	js := jsClient(t, url)
	poll.For(t, 20*time.Second, func() error {
		cons, err := js.Consumer(ctxT(t), "HM_T1", federation.ConsumerName(role))
		if err != nil {
			return err
		}
		info, err := cons.Info(ctxT(t))
		if err != nil {
			return err
		}
		return poll.Want(info.NumPending == 0 && info.NumAckPending == 0, "consumer %s: %d pending, %d unacked", role, info.NumPending, info.NumAckPending)
	})
}
