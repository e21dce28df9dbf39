package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// adoptRoles are the panes of adoptTeam.
var adoptRoles = []string{"architect", "builder", "oracle"}

// adoptTeam hosts three fake agent panes (the loop test's profile).
func adoptTeam(root string, extra string) string {
	return adoptTeamWith(root, extra, adoptRoles)
}

// adoptTeamWith is adoptTeam for roles, with extra settings.
func adoptTeamWith(root, extra string, roles []string) string {
	var panes []string
	for _, r := range roles {
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
	return panePIDsOf(t, h, adoptRoles)
}

// panePIDsOf waits until each of roles' panes runs and returns their
// programs' pids.
func panePIDsOf(t *testing.T, h *hubProc, roles []string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	poll.For(t, 60*time.Second, func() error {
		st, err := fetchStatus(t, h)
		if err != nil {
			return err
		}
		for _, r := range roles {
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

// waitSessionLines waits until the program of each of roles' panes
// logged its first prompt (the session line).
func waitSessionLines(t *testing.T, root string, roles ...string) {
	t.Helper()
	for _, r := range roles {
		log := root + "/" + r + ".jsonl"
		poll.For(t, 30*time.Second, func() error {
			return poll.Want(len(readPrompts(t, log)) > 0, "%s session line", r)
		})
	}
}

// wantAdopted fails t for each pane of before whose program pid changed
// to after (restarted instead of adopted), saying how the hub went.
func wantAdopted(t *testing.T, before, after map[string]int, how string) {
	t.Helper()
	for r, pid := range before {
		if after[r] != pid {
			t.Errorf("pane %s: program pid %d after %s and a new hub, was %d: restarted, not adopted", r, after[r], how, pid)
		}
	}
}

// waitExit0 waits for the hub to exit with status 0.
func waitExit0(t *testing.T, h *hubProc, after string) {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Fatalf("hub exit after %s: %v\n%s", after, err, h.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hub did not stop after %s\n%s", after, h.log.String())
	}
}

// signalExit0 sends sig to the hub and waits for it to exit with status 0.
func signalExit0(t *testing.T, h *hubProc, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitExit0(t, h, sig.String())
}

// waitProgramsGone waits until none of the programs in pids runs.
func waitProgramsGone(t *testing.T, pids map[string]int, why string) {
	t.Helper()
	poll.For(t, 60*time.Second, func() error {
		for r, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("pane %s's program %d still runs %s", r, pid, why)
			}
		}
		return nil
	})
}

// typeOnceEach sends a message <prefix>-<i> to each pane through h and
// waits until each was typed into its pane exactly once.
func typeOnceEach(t *testing.T, h *hubProc, root, prefix string) {
	t.Helper()
	op := dialAs(t, h, "user", false)
	for i, r := range adoptRoles {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: r, MessageID: id, Content: "message " + id})
		if err != nil || !ack.OK {
			t.Fatalf("send %s: %+v %v", id, ack, err)
		}
	}
	for i, r := range adoptRoles {
		id, log := fmt.Sprintf("%s-%d", prefix, i), root+"/"+r+".jsonl"
		poll.For(t, 60*time.Second, func() error {
			return poll.Want(trailerCounts(readPrompts(t, log))[id] == 1, "%s typed once into %s", id, r)
		})
	}
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
	waitSessionLines(t, root, adoptRoles...)
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
	wantAdopted(t, before, after, "kill -9")
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
		if !p.Adopted || p.Origin != "adopted" || p.Restarts != 0 {
			t.Errorf("hm status --json: pane %s adopted %v, origin %q, restarts %d; want adopted, no restart", p.Role, p.Adopted, p.Origin, p.Restarts)
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
	waitProgramsGone(t, before, "after its refused keeper's grace")
}

// TestLeavePanes: a hub stopped leaving its panes, by SIGUSR1 and a
// new hm up, or by hm restart (which signals the running hub and runs the
// new one): the old hub exits 0, the new hub adopts the programs (same
// pids) and types into each once; SIGTERM of the new hub then ends them
// (SPEC §6).
func TestLeavePanes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		how     string
		restart func(t *testing.T, h *hubProc, root string) *hubProc
	}{
		{"SIGUSR1", func(t *testing.T, h *hubProc, root string) *hubProc {
			signalExit0(t, h, syscall.SIGUSR1)
			if !strings.Contains(h.log.String(), "the root's pane host keeps the panes' programs running") {
				t.Errorf("the hub did not say it left the panes:\n%s", h.log.String())
			}
			return startHub(t, root)
		}},
		{"hm restart", func(t *testing.T, h *hubProc, root string) *hubProc {
			h2 := startHubAs(t, root, "restart", nil)
			waitExit0(t, h, "hm restart")
			return h2
		}},
	} {
		t.Run(tc.how, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeSettings(t, root, adoptTeam(root, ""))
			h := startHub(t, root)
			before := panePIDs(t, h)
			h2 := tc.restart(t, h, root)
			wantAdopted(t, before, panePIDs(t, h2), tc.how)
			typeOnceEach(t, h2, root, "left")
			// The adopted programs kept their context: the new hub types
			// them no session greeting (a model turn each, for a real CLI).
			for _, r := range adoptRoles {
				if n := trailerCounts(readPrompts(t, root+"/"+r+".jsonl"))["session-2-"+r]; n != 0 {
					t.Errorf("pane %s: the new hub typed its session greeting into the adopted program (%d times)", r, n)
				}
			}
			h2.stop()
			waitProgramsGone(t, before, "after SIGTERM of the hub")
		})
	}
}

// TestReloadedPaneJoinsHost: a pane hm reload adds joins the root's one
// pane host (#37): the hub has one `hm pane-keeper` child for all its
// panes, and after a kill -9 the next hub adopts the added pane as well.
func TestReloadedPaneJoinsHost(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeamWith(root, "", adoptRoles[:2]))
	h := startHub(t, root)
	first := panePIDsOf(t, h, adoptRoles[:2])
	hosts := keeperPIDs(t, h.cmd.Process.Pid)
	if len(hosts) != 1 {
		t.Fatalf("%d pane hosts beside the hub for two panes, want 1", len(hosts))
	}
	writeSettings(t, root, adoptTeam(root, ""))
	bin, env := hmBinary(t, "hm")
	cmd := exec.Command(bin, "reload")
	cmd.Env, cmd.Dir = cleanEnv(root, env...), root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hm reload: %v\n%s", err, out)
	}
	before := panePIDs(t, h)
	wantAdopted(t, first, before, "hm reload") // the unchanged panes untouched
	if now := keeperPIDs(t, h.cmd.Process.Pid); len(now) != 1 || now[0] != hosts[0] {
		t.Fatalf("pane hosts after hm reload added a pane: %v, want the one before, %v", now, hosts)
	}
	h.kill()
	h2 := startHub(t, root)
	wantAdopted(t, before, panePIDs(t, h2), "kill -9")
	h2.stop()
	waitProgramsGone(t, before, "after SIGTERM of the hub")
}

// TestFaultKill9AtEnter: the hub kills itself right after a message's
// first Enter left it and before anything recorded it
// (HM_FAULT_KILL_AT_ENTER; before the fix, between the Enter's raw write
// and its entered-log record). The pane host keeps the program, which
// takes that Enter; the next hub adopts it and must not type the message
// again: every ACKed message reaches the program exactly once.
func TestFaultKill9AtEnter(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	roles := []string{"architect"}
	writeSettings(t, root, adoptTeamWith(root, "", roles))
	// The session line is the pane's first Enter, the first message its
	// second.
	h := startHubEnv(t, root, []string{"HM_FAULT_KILL_AT_ENTER=2"}, "--rate-limit", "0")
	before := panePIDsOf(t, h, roles)
	op := dialAs(t, h, "user", false)
	var acked []string
	for i := range 4 {
		id := fmt.Sprintf("at-enter-%d", i)
		ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "architect", MessageID: id, Content: "message " + id})
		if err != nil {
			break // the hub killed itself
		}
		if !ack.OK {
			t.Fatalf("send %s: %+v", id, ack)
		}
		acked = append(acked, id)
	}
	select {
	case err := <-h.done:
		h.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatalf("the hub did not kill itself at the message's Enter; log:\n%s", hubLog(root))
	}
	if len(acked) == 0 {
		t.Fatal("no message ACKed before the kill")
	}

	h2 := startHub(t, root, "--rate-limit", "0")
	wantAdopted(t, before, panePIDsOf(t, h2, roles), "kill -9 at an Enter")
	log := root + "/architect.jsonl"
	poll.For(t, 90*time.Second, func() error {
		got := trailerCounts(readPrompts(t, log))
		var missing []string
		for _, id := range acked {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		return poll.Want(len(missing) == 0, "not typed yet: %v", missing)
	})
	waitQueueDrained(t, h2, "architect")
	got := trailerCounts(readPrompts(t, log))
	for _, id := range acked {
		if got[id] != 1 {
			t.Errorf("%s typed %d times into the adopted program; prompts:\n%s", id, got[id], promptsWith(t, log, id))
		}
	}
	if t.Failed() {
		t.Logf("hub log:\n%s", hubLog(root))
	}
	h2.stop()
}

// TestFaultKill9ScreenRebuilt: a hub whose fake agent pane (a profile with
// a ready marker) sits at its prompt is killed with -9, and a new hub
// adopts the pane: its screen, as hm attach shows it, holds the program's
// rows from before the kill (the receipt of its last message), and a
// message sent right after the restart is typed at the prompt, with no
// unmarked wait (the profile-drift warning) in the new hub's log (#37).
func TestFaultKill9ScreenRebuilt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	roles := []string{"builder"}
	writeSettings(t, root, adoptTeamWith(root, "", roles))
	h := startHub(t, root)
	before := panePIDsOf(t, h, roles)
	waitSessionLines(t, root, roles...)
	sendOnce(t, h, root, "builder", "screen-0")
	// The program's rows: its prompt with the message, and its receipt.
	rows := []string{"message screen-0", "● received "}
	attachShows(t, root, "builder", rows...) // the hub before read them
	h.kill()

	lay := layout.Layout{Root: root}
	st, err := os.Stat(lay.HubLog())
	if err != nil {
		t.Fatal(err)
	}
	h2 := startHub(t, root)
	wantAdopted(t, before, panePIDsOf(t, h2, roles), "kill -9")
	attachShows(t, root, "builder", rows...)
	sendOnce(t, h2, root, "builder", "screen-1")
	log, err := os.ReadFile(lay.HubLog())
	if err != nil {
		t.Fatal(err)
	}
	if after := string(log[min(int(st.Size()), len(log)):]); strings.Contains(after, "no ready marker on a quiet screen") {
		t.Errorf("the adopted pane, at its prompt, was typed into on the unmarked wait:\n%s", after)
	}
	h2.stop()
}

// sendOnce sends the message "message <id>" to role through h and waits
// until it was typed into the pane exactly once.
func sendOnce(t *testing.T, h *hubProc, root, role, id string) {
	t.Helper()
	op := dialAs(t, h, "user", false)
	ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: role, MessageID: id, Content: "message " + id})
	if err != nil || !ack.OK {
		t.Fatalf("send %s: %+v %v", id, ack, err)
	}
	log := root + "/" + role + ".jsonl"
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(trailerCounts(readPrompts(t, log))[id] == 1, "%s typed once into %s", id, role)
	})
}

// attachShows runs hm attach role in a 160x40 terminal until the pane's
// screen it draws shows each of want, then detaches (Ctrl-\\), expecting
// a clean exit, and returns all that attach wrote.
func attachShows(t *testing.T, root, role string, want ...string) string {
	t.Helper()
	bin, env := hmBinary(t, "hm")
	cmd := exec.Command(bin, "attach", role)
	cmd.Env, cmd.Dir = cleanEnv(root, env...), root
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("hm attach in a terminal: %v", err)
	}
	defer tty.Close()
	var out testutil.SyncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, tty)
	}()
	done := make(chan error, 1)
	detached := false
	detach := func() {
		detached = true
		if _, err := tty.Write([]byte{0x1c}); err != nil { // Ctrl-\ detaches
			t.Errorf("detach: %v", err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("hm attach after Ctrl-\\: %v\n%s", err, ansi.Strip(out.String()))
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("hm attach did not detach on Ctrl-\\:\n%s", ansi.Strip(out.String()))
		}
		// What attach wrote last (its detach line) may still wait in the
		// terminal: read to the end (EIO once the program and its
		// terminal are gone) before closing, or it is lost (make test,
		// loaded: "lacks hm: detached").
		select {
		case <-copied:
		case <-time.After(30 * time.Second):
		}
		tty.Close()
		<-copied
	}
	defer func() { // also when the poll fails
		if !detached {
			detach()
		}
	}()
	poll.For(t, 60*time.Second, func() error {
		screen := ansi.Strip(out.String())
		for _, w := range want {
			if !strings.Contains(screen, w) {
				return fmt.Errorf("hm attach %s shows no %q; it shows:\n%s", role, w, screen)
			}
		}
		return nil
	})
	detach()
	return out.String()
}
