package e2e

// The fault suite, continued: the ledger unable to commit (file system full,
// files immutable) and a slow consumer that never reads.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/triggers"
)

// TestFaultLedgerUnwritable makes the ledger unable to commit — the file
// system holding it full, or its files immutable (read-only even through
// the hub's open descriptors): sends are refused with journal_unavailable
// and nothing is ACKed that was not committed; a trigger file waits instead
// of being dropped or rejected; when the fault is repaired the same hub
// process accepts messages again, and every ACKed message is in the ledger.
func TestFaultLedgerUnwritable(t *testing.T) {
	t.Parallel()
	t.Run("disk-full", func(t *testing.T) {
		t.Parallel() // each case has a hub and a root of its own
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
		t.Parallel()
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
			t.Parallel() // two hubs of their own: the RSS of each is its own
			slowConsumer(t, tc.bodySize, tc.afterDrop, tc.boundMB, tc.growMB)
		})
	}
}

func slowConsumer(t *testing.T, bodySize, afterDrop int, boundMB, growMB float64) {
	root := t.TempDir()
	h := startHub(t, root, "--no-panes", "--rate-limit", "0")
	pid := h.cmd.Process.Pid
	stalled := dialAs(t, h, "builder", true) // never read until the drop
	ctx := tctx(t, 8*time.Minute)

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
	// The flood goes on until it is both afterDrop messages past the drop
	// and at least half the bound in all: where the hub drops the listener
	// depends on how much the kernel's socket buffers took, so a fixed
	// count can fall short of the bound it is meant to test.
	floodMsgs := int(boundMB/2*(1<<20))/bodySize + 1
	poll.For(t, 5*time.Minute, func() error {
		sample()
		n := count()
		return poll.Want(n >= atDrop+afterDrop && n >= floodMsgs, "messages sent: %d, want %d after the drop (at %d) and %d in all", n, afterDrop, atDrop, floodMsgs)
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
	deadline := time.Now().Add(5 * time.Minute) // replaying 100 MiB on a loaded machine
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
