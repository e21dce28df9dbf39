package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/internal/status"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/layout"
	"hm/internal/poll"
	"hm/journal"
	"hm/triggers"
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

// waitQueueDrained waits until the pane reports an empty queue and idle.
func waitQueueDrained(t *testing.T, h *hubProc, role string) {
	t.Helper()
	poll.For(t, 60*time.Second, func() error {
		st, err := fetchStatus(t, h)
		_, state, queued, ok := st.pane(role)
		return poll.Want(err == nil && ok && queued == 0 && state == "idle", "%s queue drained", role)
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

// TestFaultLedgerUnwritable makes the ledger unable to commit — the file
// system holding it full, or its files immutable (read-only even through
// the hub's open descriptors): sends are refused with journal_unavailable
// and nothing is ACKed that was not committed; a trigger file waits instead
// of being dropped or rejected; when the fault is repaired the same hub
// process accepts messages again, and every ACKed message is in the ledger.
func TestFaultLedgerUnwritable(t *testing.T) {
	t.Parallel()
	t.Run("disk-full", func(t *testing.T) {
		var filler string
		ledgerUnwritable(t,
			func(t *testing.T, lay layout.Layout) { mountTmpfs(t, lay.Runtime(), "8m") },
			func(t *testing.T, lay layout.Layout) {
				filler = lay.Runtime() + "/filler"
				t.Logf("filled the disk with %d bytes", fillDisk(t, filler))
			},
			func(t *testing.T, lay layout.Layout) {
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
			})
	})
	t.Run("read-only", func(t *testing.T) {
		// chattr +i refuses writes even through descriptors opened before.
		// The -shm file stays writable: it is memory-mapped, and SQLite
		// needs it to read at all.
		files := func(lay layout.Layout) []string { return []string{lay.Ledger(), lay.Ledger() + "-wal"} }
		ledgerUnwritable(t,
			func(t *testing.T, lay layout.Layout) {},
			func(t *testing.T, lay layout.Layout) {
				for _, f := range files(lay) {
					if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
						t.Fatalf("cannot make the ledger immutable: the fault suite needs root, chattr (Debian package e2fsprogs) and a temp dir on a file system with the i attribute such as ext4 (set TMPDIR), as in CI: %v %s", err, out)
					}
					t.Cleanup(func() { _ = exec.Command("chattr", "-i", f).Run() })
				}
			},
			func(t *testing.T, lay layout.Layout) {
				for _, f := range files(lay) {
					if out, err := exec.Command("chattr", "-i", f).CombinedOutput(); err != nil {
						t.Fatalf("chattr -i %s: %v %s", f, err, out)
					}
				}
			})
	})
}

// ledgerUnwritable runs the unwritable-ledger scenario: prepare runs before
// the hub starts, breakIt makes the ledger unable to commit, repair undoes
// it.
func ledgerUnwritable(t *testing.T, prepare, breakIt, repair func(*testing.T, layout.Layout)) {
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	prepare(t, lay)
	h := startHub(t, root, "--no-panes", "--rate-limit", "0")
	pid := h.cmd.Process.Pid
	builder := startCollector(dialAs(t, h, "builder", true))
	defer builder.stop()
	op := dialAs(t, h, "user", false)
	ctx := tctx(t, 2*time.Minute)
	body := strings.Repeat("unwritable ledger payload ", 140) // ~3.5 KiB

	var okIDs, refusedIDs []string
	send := func(id string) proto.Ack {
		t.Helper()
		ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: id + " " + body})
		if err != nil {
			t.Fatalf("send %s: %v (hub exited: %v)\n%s", id, err, exited(h), hubLog(root))
		}
		switch {
		case ack.OK:
			okIDs = append(okIDs, id)
		case ack.Status == string(status.CodeJournalUnavailable) && ack.Error != nil && *ack.Error == ack.Status && !ack.Accepted:
			refusedIDs = append(refusedIDs, id)
		default:
			t.Fatalf("send %s: want ok or journal_unavailable, got %+v", id, ack)
		}
		return ack
	}
	for i := range 5 {
		if ack := send(fmt.Sprintf("before-%d", i)); !ack.OK {
			t.Fatalf("send before the disk filled: %+v", ack)
		}
	}

	breakIt(t, lay)
	// SQLite may still reuse WAL frames for a while; keep sending until the
	// refusals are steady.
	consecutive := 0
	for i := 0; consecutive < 20; i++ {
		if i == 3000 {
			t.Fatalf("no steady journal_unavailable after %d sends to an unwritable ledger (%d ok)", i, len(okIDs))
		}
		if send(fmt.Sprintf("full-%04d", i)).OK {
			consecutive = 0
		} else {
			consecutive++
		}
	}
	t.Logf("unwritable ledger: %d sends ACKed, %d refused", len(okIDs)-5, len(refusedIDs))
	// A trigger file (on another file system) that cannot be committed waits.
	trig, err := triggers.Write(lay.Triggers(), "builder", "trig-full-1", "written while the ledger could not commit")
	if err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error { _, err := os.Stat(trig); return poll.Want(os.IsNotExist(err), "trigger file claimed") })

	repair(t, lay)
	recovered := false
	for i := 0; !recovered; i++ {
		if i == 300 {
			t.Fatalf("sends still refused 30 s after the repair\n%s", hubLog(root))
		}
		if send(fmt.Sprintf("after-%03d", i)).OK {
			recovered = true
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := range 20 {
		if ack := send(fmt.Sprintf("recovered-%02d", i)); !ack.OK {
			t.Fatalf("send after recovery refused: %+v", ack)
		}
	}
	if exited(h) || h.cmd.Process.Pid != pid {
		t.Fatal("the hub restarted; recovery must happen in the same process")
	}
	poll.For(t, 60*time.Second, func() error {
		for _, id := range okIDs {
			if builder.ids.count(id) == 0 {
				return fmt.Errorf("ACKed %s not delivered to the builder", id)
			}
		}
		return poll.Want(builder.ids.count("trig-full-1") == 1, "trig-full-1 delivered %d times, want once", builder.ids.count("trig-full-1"))
	})
	for _, id := range refusedIDs {
		if builder.ids.count(id) != 0 {
			t.Errorf("%s was refused with journal_unavailable but delivered", id)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(lay.Triggers(), "rejected")); len(ents) != 0 {
		t.Errorf("trigger rejected while the ledger was unavailable: %v", ents)
	}

	h.stop()
	withLedger(t, root, func(l *journal.Ledger) {
		for _, id := range append(okIDs, "trig-full-1") {
			if m, err := l.Get(context.Background(), id); err != nil || m.Status.Rank() < status.Routed.Rank() {
				t.Errorf("ACKed %s after recovery: %s %v", id, m.Status, err)
			}
		}
		committed := 0
		for _, id := range refusedIDs {
			if _, err := l.Get(context.Background(), id); err == nil {
				committed++
			}
		}
		if committed > 0 {
			t.Logf("%d refused messages are nevertheless in the ledger (commit reported as failed)", committed)
		}
	})
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 {
		t.Fatalf("hm journal verify after the episode: %+v", r)
	}
}

// TestFaultSlowConsumer registers a listener that never reads and floods
// it. The stated bound: the hub's peak resident memory (VmHWM) stays under
// boundMB, and it does not grow by more than growMB while the flood goes on
// after the drop. A hub that kept the whole flood in memory would exceed the
// bound (the flood is more than half of it, and Go's heap grows to twice the
// live data). The stalled connection must be dropped, and every message it
// did not read is redelivered when the listener returns.
func TestFaultSlowConsumer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		bodySize  int
		afterDrop int // messages sent after the drop, while nobody listens
		boundMB   float64
		growMB    float64
	}{
		{name: "4KiB", bodySize: 4 << 10, afterDrop: 10000, boundMB: 100, growMB: 25},
		{name: "64KiB", bodySize: 64 << 10, afterDrop: 1500, boundMB: 150, growMB: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slowConsumer(t, tc.bodySize, tc.afterDrop, tc.boundMB, tc.growMB)
		})
	}
}

func slowConsumer(t *testing.T, bodySize, afterDrop int, boundMB, growMB float64) {
	root := t.TempDir()
	h := startHub(t, root, "--no-panes", "--rate-limit", "0")
	pid := h.cmd.Process.Pid
	stalled := dialAs(t, h, "builder", true) // never read until the drop
	ctx := tctx(t, 3*time.Minute)

	base, err := rssMB(pid, "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	var maxRSS float64
	sample := func() {
		if v, err := rssMB(pid, "VmRSS"); err == nil && v > maxRSS {
			maxRSS = v
		}
	}
	listening := func() bool {
		st, err := fetchStatus(t, h)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		return slices.Contains(st.Listeners, "builder")
	}
	const senders = 4
	var (
		mu    sync.Mutex
		acked []string
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	pad := strings.Repeat("x", bodySize)
	for s := range senders {
		c := dialAs(t, h, "user", false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("slow-%d-%06d", s, n)
				ack, _, err := c.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: id + " " + pad})
				if err != nil || !ack.OK {
					t.Errorf("send %s: %+v %v", id, ack, err)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	poll.For(t, 2*time.Minute, func() error {
		sample()
		return poll.Want(!listening(), "the stalled listener to be dropped")
	})
	atDrop, rssAtDrop := count(), maxRSS
	maxRSS = 0
	poll.For(t, 2*time.Minute, func() error {
		sample()
		return poll.Want(count() >= atDrop+afterDrop, "messages sent after the drop, have %v", count())
	})
	close(stop)
	wg.Wait()
	sample()
	peak, err := rssMB(pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	total := count()
	t.Logf("dropped after %d messages (%d MiB); %d sent in all (%d MiB); hub RSS %.1f MiB at start, %.1f MiB max before the drop, %.1f MiB max after it, %.1f MiB peak (bound %.0f MiB)",
		atDrop, atDrop*bodySize>>20, total, total*bodySize>>20, base, rssAtDrop, maxRSS, peak, boundMB)
	if peak > boundMB {
		t.Errorf("hub peak RSS %.1f MiB exceeds the bound of %.0f MiB", peak, boundMB)
	}
	if maxRSS > rssAtDrop+growMB {
		t.Errorf("hub RSS grew from %.1f to %.1f MiB while %d MiB more were sent after the drop", rssAtDrop, maxRSS, (total-atDrop)*bodySize>>20)
	}
	if float64(total*bodySize>>20) < boundMB/2 {
		t.Errorf("flood of %d MiB too small to test a %.0f MiB bound", total*bodySize>>20, boundMB)
	}

	// What the stalled client can still read (it was in socket buffers when
	// the hub dropped it); then the connection ends.
	got := newIDSet()
	for {
		typ, raw, err := stalled.Next(ctx)
		if err != nil {
			break
		}
		if typ == proto.TypeMessage {
			var m proto.Message
			_ = json.Unmarshal(raw, &m)
			got.add(m.MessageID)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the stalled connection was not closed by the hub")
	}
	t.Logf("the stalled listener could still read %d messages after the drop; %d wait in the ledger", got.len(), total-got.len())

	back := startCollector(dialAs(t, h, "builder", true))
	defer back.stop()
	deadline := time.Now().Add(time.Minute)
	for missing(acked, got, back.ids) != "" {
		if time.Now().After(deadline) {
			var lost []string
			for _, id := range acked {
				if got.count(id) == 0 && back.ids.count(id) == 0 {
					lost = append(lost, id)
				}
			}
			select {
			case <-back.done:
				t.Logf("the returned listener's connection ended")
			default:
			}
			t.Fatalf("%d of %d ACKed messages never delivered to the stalled listener nor after it returned (first: %s; the returned listener got %d)",
				len(lost), total, lost[0], back.ids.len())
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.stop()
}

// missing returns the first id delivered to neither set, or "".
func missing(ids []string, a, b *idSet) string {
	for _, id := range ids {
		if a.count(id) == 0 && b.count(id) == 0 {
			return id
		}
	}
	return ""
}
