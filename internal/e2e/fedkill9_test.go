package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/federation/natstest"
	"hm/internal/ground/poll"
)

const fedKillTeam = "t9"

// fedKillSettings: a hub hosting local in a fake-agent pane and naming
// remote as another hub's (oracle, a WebSocket role, is no one's).
func fedKillSettings(root, local, remote string) string {
	return fmt.Sprintf(`{"profiles":{"claude":{"quietMs":80,"ready":[">"]}},"panes":[
	 {"role":%q,"command":%q,"profile":"claude"},
	 {"role":%q,"transport":"remote"},
	 {"role":"oracle","transport":"ws"}],"background":{"max":0}}`, local, agentCommand(root, local), remote)
}

// fedPeers reads GET /status's federation.remotePanes as role -> hub.
func fedPeers(t *testing.T, h *hubProc) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/status", h.port), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+operator(t, h.root))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Federation *struct {
			Connected   bool `json:"connected"`
			RemotePanes []struct {
				Role string `json:"role"`
				Hub  string `json:"hub"`
			} `json:"remotePanes"`
		} `json:"federation"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	if st.Federation == nil || !st.Federation.Connected {
		return nil, fmt.Errorf("not connected to NATS: %+v", st.Federation)
	}
	out := map[string]string{}
	for _, p := range st.Federation.RemotePanes {
		out[p.Role] = p.Hub
	}
	return out, nil
}

// TestFaultFederationKill9 runs two real hubs (race-built `hm up --nats`)
// joined through an embedded nats-server: a client of hub A's architect
// (whose pane hub A hosts) sends to builder, a fake-agent pane on hub B. (a) Hub B is
// killed with SIGKILL while a stream of messages is being typed into
// builder, and restarted; (b) hub A is killed right after it ACKed a
// batch, and restarted. Every message A ACKed is in builder's own prompt
// log exactly once.
func TestFaultFederationKill9(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	rootA, rootB := t.TempDir(), t.TempDir()
	writeSettings(t, rootA, fedKillSettings(rootA, "architect", "builder"))
	writeSettings(t, rootB, fedKillSettings(rootB, "builder", "architect"))
	up := func(root, name string) *hubProc {
		return startHubEnv(t, root, nil, "--rate-limit", "0", "--nats", srv.URL(), "--team", fedKillTeam, "--hub", name)
	}
	a, b := up(rootA, "hub-a"), up(rootB, "hub-b")
	t.Cleanup(func() {
		a.kill()
		b.kill()
		if t.Failed() {
			t.Logf("hub a log:\n%s\nhub b log:\n%s", hubLog(rootA), hubLog(rootB))
		}
	})
	poll.For(t, 15*time.Second, func() error {
		pa, err := fedPeers(t, a)
		if err != nil {
			return fmt.Errorf("hub a: %w", err)
		}
		pb, err := fedPeers(t, b)
		if err != nil {
			return fmt.Errorf("hub b: %w", err)
		}
		return poll.Want(pa["builder"] == "hub-b" && pb["architect"] == "hub-a", "presence: a sees %v, b sees %v", pa, pb)
	})

	var mu sync.Mutex
	var acked []string
	logB := filepath.Join(rootB, "builder.jsonl")
	typed := func() map[string]int { return trailerCounts(readPrompts(t, logB)) }
	sendAll := func(arch *client.Client, prefix string, n int, gap time.Duration) {
		for i := range n {
			id := fmt.Sprintf("%s-%02d", prefix, i)
			ack, _, err := arch.Send(tctx(t, 10*time.Second), proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id,
				Content: fmt.Sprintf("federated %s", id)})
			if err != nil {
				t.Errorf("send %s: %v", id, err)
				return
			}
			if !ack.OK {
				t.Errorf("send %s refused: %+v", id, ack)
				return
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
			time.Sleep(gap)
		}
	}

	// (a) kill -9 of hub B mid-delivery: the stream is ACKed by A while B's
	// pane types it one by one; B dies once two are typed.
	arch := dialAs(t, a, "architect", false)
	var wg sync.WaitGroup
	wg.Go(func() { sendAll(arch, "a", 6, 50*time.Millisecond) })
	poll.For(t, 20*time.Second, func() error {
		got := typed()
		return poll.Want(got["a-00"] > 0 && got["a-01"] > 0, "typed into builder so far: %v", got)
	})
	b.kill()
	wg.Wait()
	b = up(rootB, "hub-b")

	// (b) kill -9 of hub A right after it ACKed a batch.
	sendAll(arch, "b", 4, 0)
	a.kill()
	a = up(rootA, "hub-a")

	mu.Lock()
	want := slices.Clone(acked)
	mu.Unlock()
	if len(want) != 10 {
		t.Fatalf("ACKed %d of 10: %v", len(want), want)
	}
	poll.For(t, 30*time.Second, func() error {
		got := typed()
		var missing []string
		for _, id := range want {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		return poll.Want(len(missing) == 0, "not typed into builder yet: %s", strings.Join(missing, " "))
	})
	got := typed()
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("%s typed %d times into builder; the prompts holding it:\n%s\nits ledger events on hub b: %s",
				id, got[id], promptsWith(t, logB, id), ledgerEvents(t, b, id))
		}
	}
}

// promptsWith lists the prompts of a fake agent's log that hold id's
// trailer, with when and which process took each, for a failure's message.
func promptsWith(t *testing.T, log, id string) string {
	var b strings.Builder
	for i, p := range readPrompts(t, log) {
		if strings.Contains(p.Prompt, "[hm:"+id+"]") {
			fmt.Fprintf(&b, "  #%d at %d by pid %d: %q\n", i, p.At, p.PID, p.Prompt)
		}
	}
	return b.String()
}

// ledgerEvents is id's row in h's ledger (hm comms history, every
// session), for a failure's message.
func ledgerEvents(t *testing.T, h *hubProc, id string) string {
	r := run(t, h.root, nil, "hm", "comms", "history", "--session", "all", "--last", "100")
	var b strings.Builder
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, id) {
			b.WriteString(line + "\n")
		}
	}
	return b.String() + r.stderr
}
