package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/layout"
	"hm/internal/poll"
)

// adoptRoles are the panes of adoptTeam.
var adoptRoles = []string{"architect", "builder", "oracle"}

// adoptTeam hosts three fake agent panes (the loop test's profile).
func adoptTeam(root string, extra string) string {
	var panes []string
	for _, r := range adoptRoles {
		panes = append(panes, fmt.Sprintf(`{"role":%q,"command":%q,"profile":"claude"}`, r, agentCommand(root, r)))
	}
	return fmt.Sprintf(`{%s"profiles":{"claude":{"quietMs":80,"ready":[">"]}},"panes":[%s]}`, extra, strings.Join(panes, ","))
}

// envOf reads the variable name of process pid's environment (Linux).
func envOf(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("environment of %d: %v", pid, err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("process %d has no %s", pid, name)
	return ""
}

// panePIDs waits until every pane of adoptRoles runs and returns their pids.
func panePIDs(t *testing.T, h *hubProc) map[string]int {
	t.Helper()
	pids := map[string]int{}
	poll.For(t, 60*time.Second, func() error {
		st, err := fetchStatus(t, h)
		if err != nil {
			return err
		}
		for _, r := range adoptRoles {
			pid, state, _, ok := st.pane(r)
			if !ok || pid == 0 {
				return fmt.Errorf("pane %s not running (state %q)", r, state)
			}
			pids[r] = pid
		}
		return nil
	})
	return pids
}

// TestFaultKill9PanesAdopted: a hub killed with -9 in the middle of a
// stream of 100 messages into three panes; a new hub on the root adopts
// the panes from their keepers: no program restarted (the same pids),
// every message typed into its pane exactly once.
func TestFaultKill9PanesAdopted(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root, "--rate-limit", "0")
	before := panePIDs(t, h)
	for _, r := range adoptRoles {
		log := root + "/" + r + ".jsonl"
		poll.For(t, 30*time.Second, func() error {
			return poll.Want(len(readPrompts(t, log)) > 0, "%s session line", r)
		})
	}
	const total, killAt = 100, 40
	ids := make([]string, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("adopt-%03d", i)
	}
	// send sends ids[from:] to the panes in turn until one fails (the hub
	// died) and returns the index of the first not acknowledged.
	send := func(h *hubProc, from, until int) int {
		op := dialAs(t, h, "user", false)
		for i := from; i < until; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: adoptRoles[i%3], MessageID: ids[i], Content: "stream message " + ids[i]})
			cancel()
			if err != nil {
				return i
			}
			if !ack.OK {
				t.Fatalf("send %s: %+v", ids[i], ack)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return until
	}
	next := send(h, 0, killAt)
	h.kill()

	h2 := startHub(t, root, "--rate-limit", "0")
	after := panePIDs(t, h2)
	for _, r := range adoptRoles {
		if after[r] != before[r] {
			t.Errorf("pane %s: program pid %d after the new hub, was %d: restarted, not adopted", r, after[r], before[r])
		}
	}
	// The adopted programs' tokens, from the hub before, still name them.
	for _, r := range adoptRoles {
		tok := envOf(t, after[r], "HM_TOKEN")
		c, err := client.Dial(tctx(t, 10*time.Second), h2.url())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Register(tctx(t, 10*time.Second), r, tok, false); err != nil {
			t.Errorf("pane %s: its program's HM_TOKEN is refused by the adopting hub: %v", r, err)
		}
		c.CloseNow()
	}
	for _, p := range cliStatus(t, root).Panes {
		if !p.Adopted || p.Restarts != 0 {
			t.Errorf("hm status --json: pane %s adopted %v, restarts %d; want adopted, no restart", p.Role, p.Adopted, p.Restarts)
		}
	}
	if t.Failed() {
		t.Fatalf("hub log:\n%s", hubLog(root))
	}
	if n := send(h2, next, total); n != total {
		t.Fatalf("the new hub failed the send of %s", ids[n])
	}
	for _, r := range adoptRoles {
		waitQueueDrained(t, h2, r)
	}
	lost, twice := 0, 0
	for i, id := range ids {
		r := adoptRoles[i%3]
		switch n := trailerCounts(readPrompts(t, root+"/"+r+".jsonl"))[id]; {
		case n == 0:
			lost++
			t.Errorf("%s never typed into %s", id, r)
		case n > 1:
			twice++
			t.Errorf("%s typed into %s %d times", id, r, n)
		}
	}
	t.Logf("%d messages, %d sent to the killed hub: %d lost, %d typed twice, %d programs restarted", total, next, lost, twice, 0)
	h2.stop()
}

// TestFaultKeeperOfAnotherSecretRefused: after a kill -9, the root's pane
// secret changes (another hub's keepers, say): the new hub does not adopt
// the keeper, starts the program fresh, and leaves the old keeper and its
// program alone, to end after their grace.
func TestFaultKeeperOfAnotherSecretRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, `"paneKeepMinutes":0.1,`))
	h := startHub(t, root)
	before := panePIDs(t, h)
	h.kill()
	lay := layout.Layout{Root: root}
	if err := os.Remove(lay.PaneSecret()); err != nil {
		t.Fatal(err)
	}
	h2 := startHub(t, root)
	after := panePIDs(t, h2)
	for _, r := range adoptRoles {
		if after[r] == before[r] {
			t.Errorf("pane %s adopted (pid %d) from a keeper with another secret", r, after[r])
		}
		if err := syscall.Kill(before[r], 0); err != nil {
			t.Errorf("pane %s: the refused keeper's program is gone (%v): not left alone", r, err)
		}
	}
	if !strings.Contains(hubLog(root), "do not trust each other") {
		t.Errorf("the hub log does not say why the keepers were refused:\n%s", hubLog(root))
	}
	h2.stop()
	// The refused keepers end after their grace (6 s), hanging their
	// programs up.
	poll.For(t, 60*time.Second, func() error {
		for _, r := range adoptRoles {
			if syscall.Kill(before[r], 0) == nil {
				return fmt.Errorf("pane %s's old program %d still runs", r, before[r])
			}
		}
		return nil
	})
}

// TestLeavePanesOnSIGUSR1: SIGUSR1 stops the hub leaving its panes'
// programs to their keepers: the next hub adopts them (same pids) and
// types into them; SIGTERM then stops the hub with its panes (SPEC §6).
func TestLeavePanesOnSIGUSR1(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root)
	before := panePIDs(t, h)
	if err := h.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Fatalf("hub exit after SIGUSR1: %v\n%s", err, h.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hub did not stop after SIGUSR1\n%s", h.log.String())
	}
	if !strings.Contains(h.log.String(), "left to their keepers") {
		t.Errorf("the hub did not say it left the panes:\n%s", h.log.String())
	}
	h2 := startHub(t, root)
	after := panePIDs(t, h2)
	for _, r := range adoptRoles {
		if after[r] != before[r] {
			t.Errorf("pane %s: pid %d after SIGUSR1 and a new hub, was %d", r, after[r], before[r])
		}
	}
	ids := []string{"left-0", "left-1", "left-2"}
	op := dialAs(t, h2, "user", false)
	for i, id := range ids {
		ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: adoptRoles[i], MessageID: id, Content: "after leaving " + id})
		if err != nil || !ack.OK {
			t.Fatalf("send %s: %+v %v", id, ack, err)
		}
	}
	for i, id := range ids {
		log := root + "/" + adoptRoles[i] + ".jsonl"
		poll.For(t, 60*time.Second, func() error {
			return poll.Want(trailerCounts(readPrompts(t, log))[id] == 1, "%s typed once into %s", id, adoptRoles[i])
		})
	}
	h2.stop()
	poll.For(t, 30*time.Second, func() error {
		for _, r := range adoptRoles {
			if syscall.Kill(before[r], 0) == nil {
				return fmt.Errorf("pane %s's program %d outlived SIGTERM of the hub", r, before[r])
			}
		}
		return nil
	})
}

// TestRestartAdopts: hm restart stops the running hub leaving its panes
// and runs a new hub in the foreground, which adopts them (same pids) and
// types into them.
func TestRestartAdopts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root)
	before := panePIDs(t, h)
	h2 := startHubAs(t, root, "restart", nil)
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Fatalf("old hub exit: %v\n%s", err, h.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the old hub still runs after hm restart")
	}
	after := panePIDs(t, h2)
	for _, r := range adoptRoles {
		if after[r] != before[r] {
			t.Errorf("pane %s: pid %d after hm restart, was %d", r, after[r], before[r])
		}
	}
	op := dialAs(t, h2, "user", false)
	ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: "restarted-0", Content: "after hm restart"})
	if err != nil || !ack.OK {
		t.Fatalf("send: %+v %v", ack, err)
	}
	log := root + "/builder.jsonl"
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(trailerCounts(readPrompts(t, log))["restarted-0"] == 1, "restarted-0 typed once")
	})
	h2.stop()
}
