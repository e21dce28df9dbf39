package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/journal"
)

// The fault suite (SPEC §5, §6, §9, §10): what the hub guarantees when the
// hub itself, a pane program, the disk or a client misbehaves.

// collector reads message frames from one listener until its connection
// ends or stop is called.
type collector struct {
	ids    *idSet
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	contents map[string]string // message id -> first content seen
}

func startCollector(c *client.Client) *collector {
	ctx, cancel := context.WithCancel(context.Background())
	col := &collector{ids: newIDSet(), cancel: cancel, done: make(chan struct{}), contents: map[string]string{}}
	go func() {
		defer close(col.done)
		for {
			typ, raw, err := c.Next(ctx)
			if err != nil {
				return
			}
			if typ != proto.TypeMessage {
				continue
			}
			var m proto.Message
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			col.mu.Lock()
			if _, ok := col.contents[m.MessageID]; !ok {
				col.contents[m.MessageID] = m.Content
			}
			col.mu.Unlock()
			col.ids.add(m.MessageID)
			// Acknowledge like a real listener: what is acknowledged is
			// never offered again; what is not may be, after a crash.
			_ = c.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: m.MessageID})
		}
	}()
	return col
}

// stop ends the collector and waits for its goroutine.
func (c *collector) stop() {
	c.cancel()
	<-c.done
}

func (c *collector) content(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.contents[id]
}

// burstTeam hosts the architect as a fake agent pane; builder and oracle are
// external WebSocket listeners (transport ws).
func burstTeam(root string) string {
	return fmt.Sprintf(`{"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","transport":"ws"},
	 {"role":"oracle","transport":"ws"}]}`, agentCommand(root, "architect"))
}

// TestFaultKill9DuringBurst kills the hub with SIGKILL in the middle of a
// 5,000-message burst from 4 senders to two WebSocket listeners and a pane,
// restarts it, and checks that every ACKed message is delivered: listeners
// see a message twice only if its delivery had not been recorded when the
// hub died, the pane sees every message exactly once, and the hash chain
// verifies.
func TestFaultKill9DuringBurst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, burstTeam(root))
	archLog := root + "/architect.jsonl"
	h := startHub(t, root, "--rate-limit", "0")
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, archLog)) > 0, "architect session line, have %v", len(readPrompts(t, archLog)))
	})

	s1 := map[string]*collector{}
	for _, role := range []string{"builder", "oracle"} {
		s1[role] = startCollector(dialAs(t, h, role, true))
	}

	const senders, perSender, killAfter = 4, 1250, 1500
	var (
		mu    sync.Mutex
		acked = map[string]string{} // id -> target
		wg    sync.WaitGroup
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	ctx := tctx(t, 2*time.Minute)
	for s := range senders {
		c := dialAs(t, h, "user", false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perSender {
				target := []string{"builder", "oracle"}[n%2]
				if n%250 == 7 {
					target = "architect"
				}
				id := fmt.Sprintf("burst-%d-%04d", s, n)
				ack, _, err := c.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: target, MessageID: id,
					Content: fmt.Sprintf("burst message %d from sender %d", n, s)})
				if err != nil {
					return // the hub died
				}
				if !ack.OK {
					t.Errorf("send %s refused: %+v", id, ack)
					return
				}
				mu.Lock()
				acked[id] = target
				mu.Unlock()
			}
		}()
	}
	burstDone := make(chan struct{})
	go func() { wg.Wait(); close(burstDone) }()

	// Kill once enough is ACKed, right after the pane submitted a prompt (so
	// that the kill does not fall between typing a message and its Enter: that
	// window is TestFaultKill9WhileTypingIntoPane's).
	poll.For(t, 90*time.Second, func() error {
		return poll.Want(ackedCount() >= killAfter, "acks before the kill, have %v", ackedCount())
	})
	base := len(readPrompts(t, archLog))
	poll.For(t, 60*time.Second, func() error {
		select {
		case <-burstDone:
			t.Fatalf("burst of %d messages ended before the kill point", senders*perSender)
		default:
		}
		return poll.Want(len(readPrompts(t, archLog)) > base, "a pane prompt during the burst, have %v", len(readPrompts(t, archLog)))
	})
	h.kill()
	<-burstDone
	for _, col := range s1 {
		<-col.done // the connection died with the hub
	}
	total := ackedCount()
	t.Logf("killed the hub after %d ACKed messages", total)
	if total >= senders*perSender {
		t.Fatalf("every message was ACKed before the kill: not mid-burst")
	}

	// What the ledger held at the kill: delivery to listeners is
	// at-least-once until message-ack, so a listener may see a message again
	// (with the same messageId) only if the hub had not recorded its ack.
	atKill := map[string]journal.Message{}
	withLedger(t, root, func(l *journal.Ledger) {
		for id := range acked {
			m, err := l.Get(context.Background(), id)
			if err != nil {
				t.Errorf("ACKed message %s not in the ledger after kill -9: %v", id, err)
				continue
			}
			atKill[id] = m
		}
	})

	restarted := time.Now()
	h2 := startHub(t, root, "--rate-limit", "0")
	s2 := map[string]*collector{}
	for _, role := range []string{"builder", "oracle"} {
		s2[role] = startCollector(dialAs(t, h2, role, true))
	}
	var paneIDs []string
	for id, target := range acked {
		if target == "architect" {
			paneIDs = append(paneIDs, id)
		}
	}
	slices.Sort(paneIDs)
	poll.For(t, 90*time.Second, func() error {
		for id, target := range acked {
			if target == "architect" {
				continue
			}
			if s1[target].ids.count(id)+s2[target].ids.count(id) == 0 {
				return fmt.Errorf("ACKed %s never reached %s", id, target)
			}
		}
		counts := trailerCounts(readPrompts(t, archLog))
		for _, id := range paneIDs {
			if counts[id] == 0 {
				return fmt.Errorf("ACKed %s never typed into the architect pane", id)
			}
		}
		return nil
	})
	// A fresh message per listener: the per-connection queue is FIFO, so
	// every replay queued before it has arrived once it has.
	op := dialAs(t, h2, "user", false)
	for _, role := range []string{"builder", "oracle"} {
		id := "sentinel-" + role
		if ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: role, MessageID: id, Content: "sentinel"}); err != nil || !ack.OK {
			t.Fatalf("sentinel: %+v %v", ack, err)
		}
		poll.For(t, 30*time.Second, func() error { return poll.Want(s2[role].ids.count(id) == 1, "sentinel to %s", role) })
	}
	waitQueueDrained(t, h2, "architect")

	dups := 0
	for id, target := range acked {
		if target == "architect" {
			continue
		}
		n1, n2 := s1[target].ids.count(id), s2[target].ids.count(id)
		switch {
		case n1 > 1 || n2 > 1:
			t.Errorf("%s: delivered %d times before and %d times after the kill on one connection", id, n1, n2)
		case n1 == 1 && n2 == 1:
			dups++
			if atKill[id].Status == status.Acked {
				t.Errorf("%s delivered again after restart although the ledger had recorded its message-ack (%s/%s)", id, atKill[id].Status, atKill[id].AckStatus)
			}
		}
		if n2 > 0 && !strings.HasPrefix(s2[target].content(id), "[delayed from session 1] ") {
			t.Errorf("%s redelivered without the delayed prefix: %q", id, s2[target].content(id))
		}
	}
	t.Logf("%d listener messages delivered again after restart (in flight at the kill)", dups)
	ps := readPrompts(t, archLog)
	counts := trailerCounts(ps)
	for _, id := range paneIDs {
		if counts[id] != 1 {
			t.Errorf("pane got %s %d times, want exactly once", id, counts[id])
		}
	}
	for _, p := range ps {
		for _, id := range paneIDs {
			// A row still brokered at the kill is typed after the restart
			// with the delayed prefix, unless the old program had already
			// taken it (its Enter in the entered log, the ledger's record
			// not yet committed): then its one prompt predates the restart.
			if strings.Contains(p.Prompt, "[hm:"+id+"]") && atKill[id].Status == status.Brokered && p.At >= restarted.UnixMilli() &&
				!strings.Contains(p.Prompt, "[delayed from session 1]") {
				t.Errorf("%s typed after restart without the delayed prefix: %q", id, p.Prompt)
			}
		}
	}
	t.Logf("%d pane messages ACKed, %d typed before the kill", len(paneIDs), len(paneIDs)-countBrokered(atKill, paneIDs))

	h2.stop()
	for _, col := range s2 {
		col.stop()
	}
	withLedger(t, root, func(l *journal.Ledger) {
		for _, id := range slices.Sorted(maps.Keys(acked)) {
			m, err := l.Get(context.Background(), id)
			if err != nil || (m.Status != status.Routed && m.Status != status.Acked) {
				t.Errorf("ledger after restart: %s = %+v %v", id, m.Status, err)
			}
		}
	})
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 {
		t.Fatalf("hm journal verify after kill -9: %+v", r)
	}
}

func countBrokered(at map[string]journal.Message, ids []string) int {
	n := 0
	for _, id := range ids {
		if at[id].Status == status.Brokered {
			n++
		}
	}
	return n
}

// typingTeam hosts the architect as a fake agent with a 250 ms Enter delay
// (codex's): the window between typing a message and submitting it that the
// mid-typing kills aim at. The profile is default with that delay, since the
// fake agent does not draw codex's screen.
func typingTeam(root string) string {
	return fmt.Sprintf(`{"profiles":{"default":{"enterDelayMs":250}},"panes":[
	 {"role":"architect","command":%q,"profile":"default"},
	 {"role":"builder","transport":"ws"},
	 {"role":"oracle","transport":"ws"}]}`, agentCommand(root, "architect"))
}

// sendQueue sends ids to the architect as the operator and checks the ACKs.
func sendQueue(t *testing.T, h *hubProc, ids []string) {
	t.Helper()
	op := dialAs(t, h, "user", false)
	for _, id := range ids {
		ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "architect", MessageID: id, Content: "queued message " + id})
		if err != nil || !ack.OK {
			t.Fatalf("send %s: %+v %v", id, ack, err)
		}
	}
}

// waitQueueDrained waits until the pane reports an empty queue and ready.
func waitQueueDrained(t *testing.T, h *hubProc, role string) {
	t.Helper()
	poll.For(t, 60*time.Second, func() error {
		st, err := fetchStatus(t, h)
		_, state, queued, ok := st.pane(role)
		return poll.Want(err == nil && ok && queued == 0 && state == "ready", "%s queue drained", role)
	})
}

// TestFaultKill9WhileTypingIntoPane kills the hub after a message's text was
// typed into a pane but before its Enter: after the restart the message must
// still be submitted, exactly once.
func TestFaultKill9WhileTypingIntoPane(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, typingTeam(root))
	archLog := root + "/architect.jsonl"
	h := startHub(t, root)
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, archLog)) > 0, "architect session line, have %v", len(readPrompts(t, archLog)))
	})
	w := watchPane(t, h, "architect", "[pasted ")
	base := w.n()
	ids := []string{"typing-1", "typing-2", "typing-3"}
	sendQueue(t, h, ids)
	if !w.waitN(base+2, 30*time.Second) {
		t.Fatal("typing-2 was never typed")
	}
	h.kill()
	w.stop()
	if trailerCounts(readPrompts(t, archLog))["typing-2"] != 0 {
		t.Fatal("typing-2 was submitted before the kill: the kill missed the typing window")
	}
	withLedger(t, root, func(l *journal.Ledger) {
		m, err := l.Get(context.Background(), "typing-2")
		t.Logf("typing-2 at the kill: status=%s ack=%s err=%v", m.Status, m.AckStatus, err)
	})

	h2 := startHub(t, root)
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(trailerCounts(readPrompts(t, archLog))["typing-3"] > 0, "typing-3 delivered after restart")
	})
	waitQueueDrained(t, h2, "architect")
	counts := trailerCounts(readPrompts(t, archLog))
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("pane got %s %d times, want exactly once", id, counts[id])
		}
	}
	h2.stop()
}

// TestFaultPaneKilledDuringInjection kills the pane's program (SIGKILL to
// the pid `hm status --json` reports) while a queue of messages is being
// typed into it: the pane restarts and every message arrives exactly once.
func TestFaultPaneKilledDuringInjection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		midTyping bool // kill between a message's text and its Enter
	}{
		{name: "between-messages"},
		{name: "mid-typing", midTyping: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a hub and a root of its own
			root := t.TempDir()
			writeSettings(t, root, typingTeam(root))
			archLog := root + "/architect.jsonl"
			h := startHub(t, root)
			poll.For(t, 30*time.Second, func() error {
				return poll.Want(len(readPrompts(t, archLog)) > 0, "architect session line, have %v", len(readPrompts(t, archLog)))
			})
			pid, _, _, ok := cliStatus(t, root).pane("architect")
			if !ok || pid <= 0 {
				t.Fatalf("no architect pid in hm status --json")
			}
			w := watchPane(t, h, "architect", "[pasted ")
			base := w.n()
			ids := []string{"q-1", "q-2", "q-3", "q-4", "q-5"}
			sendQueue(t, h, ids)
			if tc.midTyping {
				// q-2's text is in the pane; its Enter is 250 ms away.
				if !w.waitN(base+2, 30*time.Second) {
					t.Fatal("q-2 was never typed")
				}
			} else {
				// q-2 was submitted; q-3 waits for the pane to go idle.
				poll.For(t, 30*time.Second, func() error { return poll.Want(trailerCounts(readPrompts(t, archLog))["q-2"] > 0, "q-2 submitted") })
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill pane pid %d: %v", pid, err)
			}
			w.stop()
			if tc.midTyping && trailerCounts(readPrompts(t, archLog))["q-2"] != 0 {
				t.Fatal("q-2 was submitted before the kill: the kill missed the typing window")
			}
			poll.For(t, 30*time.Second, func() error {
				st, err := fetchStatus(t, h)
				p, state, _, ok := st.pane("architect")
				return poll.Want(err == nil && ok && p > 0 && p != pid && state != "exited", "pane restarted")
			})
			poll.For(t, 60*time.Second, func() error {
				return poll.Want(trailerCounts(readPrompts(t, archLog))["q-5"] > 0, "q-5 delivered after the restart")
			})
			waitQueueDrained(t, h, "architect")
			ps := readPrompts(t, archLog)
			counts := trailerCounts(ps)
			for _, id := range ids {
				if counts[id] != 1 {
					t.Errorf("pane got %s %d times, want exactly once", id, counts[id])
				}
			}
			pids := map[int]bool{}
			for _, p := range ps {
				pids[p.PID] = true
			}
			if len(pids) < 2 {
				t.Errorf("prompts came from %d program runs, want the killed one and its restart", len(pids))
			}
			st := cliStatus(t, root)
			for _, p := range st.Panes {
				if p.Role == "architect" && p.Restarts < 1 {
					t.Errorf("architect restarts = %d after its program was killed", p.Restarts)
				}
			}
			h.stop()
		})
	}
}
