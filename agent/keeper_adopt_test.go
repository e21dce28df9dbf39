package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestKeeperAdoption: after the hub is gone, the keeper holds the program
// (its pid unchanged) and buffers its output; hubs of another root or
// with another secret are refused and the keeper, left alone, is then
// adopted by the right one: the master arrives over the socket, with the
// pid and the output written meanwhile, and typing on the handed-over
// master reaches the program. Told to quit, the adopted keeper goes and
// removes its socket.
func TestKeeperAdoption(t *testing.T) {
	t.Parallel()
	const root, secret = "/the/root", "the-secret"
	spec, logPath := fakeSpec(t, "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_BUSY_MS=500", "FAKEAGENT_NO_PASTE=1")
	spec.Role = "builder"
	sockDir := filepath.Join(spec.Dir, "panes")
	k := testKeeper()
	k.SocketDir, k.Root, k.Secret, k.Grace = sockDir, root, secret, time.Minute
	spec.Keeper = k
	pr, exited, drained := startKept(t, &spec)
	defer func() {
		_ = signalGroup(pr.pid, syscall.SIGKILL)
		<-exited
	}()
	typeAndWait(t, pr.master, logPath, "first", 1)
	if _, err := pr.master.Write([]byte("second\r")); err != nil { // taken once the hub is gone
		t.Fatal(err)
	}
	// The hub dies: its descriptors close; nobody signals the program.
	pr.master.Close()
	<-drained
	pr.keeper.ch.Close()
	waitPrompts(t, logPath, 2)

	sock := HostSocket(sockDir)
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keeper socket %s: %v, %v; want mode 0600", sock, st, err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, root, pane, secret string
		want                     error
	}{
		{"another secret", root, "builder", "another-secret", ErrKeeperRefused},
		{"another root", "/another/root", "builder", secret, ErrKeeperRefused},
		{"another pane", root, "oracle", secret, ErrNoKeeper},
	} {
		a, err := AdoptKeeper(ctx, KeeperDial{Socket: sock, Root: tc.root, Pane: tc.pane, Secret: tc.secret})
		if !errors.Is(err, tc.want) {
			if a != nil {
				a.Release()
			}
			t.Fatalf("%s: adopt = %v, want %v", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if !procAlive(pr.keeper.pid) || !procAlive(pr.pid) {
		t.Fatal("a refused hub ended the keeper or the program")
	}
	a, err := AdoptKeeper(ctx, KeeperDial{Socket: sock, Root: root, Pane: "builder", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Master.Close()
	if a.Pid != pr.pid || a.KeeperPid != pr.keeper.pid {
		t.Errorf("hand-over pid %d keeper %d, want %d and %d", a.Pid, a.KeeperPid, pr.pid, pr.keeper.pid)
	}
	// The program logs a prompt before it answers it: the answer is in the
	// host's buffer, or (the program or the host slow on a loaded machine)
	// it follows on the handed-over master. Either way it is not lost.
	out := string(a.Output)
	for end := time.Now().Add(15 * time.Second); !strings.Contains(out, "received 6 bytes: second") && time.Now().Before(end); {
		buf := make([]byte, 4096)
		_ = a.Master.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := a.Master.Read(buf)
		out += string(buf[:n])
	}
	_ = a.Master.SetReadDeadline(time.Time{})
	if !strings.Contains(out, "received 6 bytes: second") {
		t.Errorf("output buffered %q and read after the hand-over %q lack the answer to the second prompt", a.Output, out[len(a.Output):])
	}
	typeAndWait(t, a.Master, logPath, "third", 3)
	a.keeper().stop()
	wantHostGone(t, pr.keeper, sock)
}

// wantHostGone waits for host, its last pane dropped, to end and checks
// it removed its socket.
func wantHostGone(t *testing.T, host *keeper, sock string) {
	t.Helper()
	select {
	case <-host.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the host outlived its last pane by 15 s")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host socket after its last pane: %v, want removed", err)
	}
}

// TestAdoptKeeperNone: no socket, or one nobody listens on (removed), is
// ErrNoKeeper.
func TestAdoptKeeperNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := HostSocket(filepath.Join(dir, "stale"))
	ln, err := listenKeeper(stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.ln.Close() // a keeper killed: its socket file stays
	for _, sock := range []string{HostSocket(filepath.Join(dir, "none")), stale} {
		_, err := AdoptKeeper(context.Background(), KeeperDial{Socket: sock, Root: dir, Pane: "x", Secret: "s"})
		if !errors.Is(err, ErrNoKeeper) {
			t.Errorf("%s: %v, want ErrNoKeeper", sock, err)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket: %v, want removed", err)
	}
}

// typeAndWait types prompt with Enter on master and waits until the fake
// agent logged n prompts, the last being prompt.
func typeAndWait(t *testing.T, master *os.File, logPath, prompt string, n int) {
	t.Helper()
	if _, err := master.Write([]byte(prompt + "\r")); err != nil {
		t.Fatal(err)
	}
	ps := waitPrompts(t, logPath, n)
	if ps[n-1].Prompt != prompt {
		t.Fatalf("prompt %d is %q, want %q", n, ps[n-1].Prompt, prompt)
	}
}

// waitPrompts waits until the fake agent logged n prompts.
func waitPrompts(t *testing.T, logPath string, n int) []promptRec {
	t.Helper()
	var ps []promptRec
	poll.For(t, 15*time.Second, func() error {
		if ps = readPrompts(t, logPath); len(ps) < n {
			return fmt.Errorf("prompts %+v, want %d", ps, n)
		}
		return nil
	})
	return ps
}

// TestPaneHostHoldsEveryPane: the panes of one root share one pane host
// process (#37): the first pane's start forks it, the next panes join it,
// also one started later. A pane that stops is dropped from the host
// without disturbing the others; after the hub is gone each remaining
// pane is adopted from the same host, with its own program and output;
// once the last is dropped the host ends and removes its socket.
func TestPaneHostHoldsEveryPane(t *testing.T) {
	t.Parallel()
	const root, secret = "/the/root", "the-secret"
	sockDir := filepath.Join(t.TempDir(), "panes")
	k := testKeeper()
	k.SocketDir, k.Root, k.Secret, k.Grace = sockDir, root, secret, time.Minute
	type pane struct {
		role, log string
		pr        *proc
		exited    chan struct{}
		drained   chan struct{}
	}
	start := func(role string) *pane {
		spec, logPath := fakeSpec(t, "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_NO_PASTE=1")
		spec.Role, spec.Keeper = role, k
		pr, exited, drained := startKept(t, &spec)
		t.Cleanup(func() {
			_ = signalGroup(pr.pid, syscall.SIGKILL)
			<-exited
		})
		return &pane{role: role, log: logPath, pr: pr, exited: exited, drained: drained}
	}
	first, second := start("builder"), start("oracle")
	host := first.pr.keeper
	if host.proc == nil {
		t.Fatal("the first pane did not start the host")
	}
	if second.pr.keeper.pid != host.pid || second.pr.keeper.proc != nil {
		t.Fatalf("the second pane's host is pid %d, want it to join the first's, %d", second.pr.keeper.pid, host.pid)
	}
	// The second pane's program ends; the pane is dropped from the host.
	_ = signalGroup(second.pr.pid, syscall.SIGKILL)
	<-second.exited
	second.pr.master.Close()
	<-second.drained
	second.pr.keeper.stop()
	if !procAlive(host.pid) {
		t.Fatal("the host ended with one of its two panes")
	}
	typeAndWait(t, first.pr.master, first.log, "first", 1)
	later := start("p3") // a pane added later (hm reload)
	if later.pr.keeper.pid != host.pid {
		t.Fatalf("the later pane's host is pid %d, want %d", later.pr.keeper.pid, host.pid)
	}
	// The hub dies: its descriptors close; nobody signals the programs.
	for _, p := range []*pane{first, later} {
		p.pr.master.Close()
		<-p.drained
		p.pr.keeper.ch.Close()
	}
	ctx := context.Background()
	sock := HostSocket(sockDir)
	if _, err := AdoptKeeper(ctx, KeeperDial{Socket: sock, Root: root, Pane: "oracle", Secret: secret}); !errors.Is(err, ErrNoKeeper) {
		t.Fatalf("adopt the dropped pane: %v, want ErrNoKeeper", err)
	}
	for i, p := range []*pane{first, later} {
		a, err := AdoptKeeper(ctx, KeeperDial{Socket: sock, Root: root, Pane: p.role, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		if a.Pid != p.pr.pid || a.KeeperPid != host.pid {
			t.Errorf("%s: hand-over pid %d host %d, want %d and %d", p.role, a.Pid, a.KeeperPid, p.pr.pid, host.pid)
		}
		typeAndWait(t, a.Master, p.log, "adopted", 1+1-i)
		a.Master.Close()
		a.keeper().stop()
		if i == 0 && !procAlive(host.pid) {
			t.Fatal("the host ended while it held a pane")
		}
	}
	wantHostGone(t, host, sock)
}

// TestKeeperRunTakeAfterDrop: an adoption request for a pane the host
// dropped after the lookup is turned away, not left waiting for a loop
// that ended (the connection and its goroutine held for the host's life).
func TestKeeperRunTakeAfterDrop(t *testing.T) {
	t.Parallel()
	k := &keeperRun{reqs: make(chan *adoptReq), ended: make(chan struct{})}
	close(k.ended)
	took := make(chan bool, 1)
	go func() { took <- k.take(&adoptReq{}) }()
	select {
	case ok := <-took:
		if ok {
			t.Fatal("a dropped pane took the request")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request waited 10 s for a pane that was dropped")
	}
}

// TestAdoptKeeperBeforeHost: a keeper of an hm from before the pane host
// (pane protocol 1, which named no protocol: one keeper per pane on
// <role>.sock) still holding the pane when no host does is refused naming
// both builds' versions and protocols, not silently not found; with
// neither there, the pane is not held (ErrNoKeeper).
func TestAdoptKeeperBeforeHost(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "hm-kb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k := &Keeper{SocketDir: dir, Root: "/the/root", Secret: "s"}
	if _, err := adoptKeeper(context.Background(), k, "builder"); !errors.Is(err, ErrNoKeeper) {
		t.Fatalf("no host nor keeper: adopt = %v, want %v", err, ErrNoKeeper)
	}
	ln, err := listenKeeper(keeperSocketBeforeHost(dir, "builder"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	served := make(chan error, 1)
	go func() { served <- oldKeeperAnswers(ln, k.Secret) }()
	_, err = adoptKeeper(context.Background(), k, "builder")
	var pe *PaneProtocolError
	if !errors.Is(err, ErrKeeperRefused) || !errors.As(err, &pe) || pe.Theirs != "1" || pe.Ours != PaneProtocol() {
		t.Fatalf("an old keeper on the pane's own socket: adopt = %v, want %v naming pane protocols 1 and %s", err, ErrKeeperRefused, PaneProtocol())
	}
	if !strings.Contains(err.Error(), "(hm an earlier build) speaks pane protocol 1") {
		t.Errorf("refusal %q does not name the old build", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// oldKeeperAnswers answers one hub as a keeper from before the pane
// protocol was named: its proof carries a nonce and mac only.
func oldKeeperAnswers(ln *keeperListener, secret string) error {
	c, err := ln.ln.AcceptUnix()
	if err != nil {
		return err
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	var hello keeperHello
	if err := readLine(rd, &hello); err != nil {
		return err
	}
	nonce := newNonce()
	if err := writeLine(c, keeperProof{Nonce: nonce, MAC: keeperMAC(secret, "keeper", hello, nonce)}); err != nil {
		return err
	}
	_, _ = rd.ReadBytes('\n') // the hub closes without its proof
	return nil
}

// TestAdoptedPaneScreen: a pane whose hub left its program to the pane
// host (as a hub killed with -9 does, its screen tail unflushed by
// nothing) is adopted by the next pane of its spec with the program's
// screen as it was (the banner and the answer to the last message on
// the rows they had), its last output as the program's, not the
// adoption's, and the next message typed at the prompt with no
// unmarked wait (no drift) (#37).
func TestAdoptedPaneScreen(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	spec.Profile = ProfileClaude
	spec.Timing = Profile{Idle: 30 * time.Millisecond, EnterDelay: 70 * time.Millisecond, Verify: 700 * time.Millisecond,
		Screen: Markers{Ready: []string{">"}}}
	k := testKeeper()
	k.SocketDir, k.Root, k.Secret, k.Grace = filepath.Join(spec.Dir, "panes"), "/the/root", "the-secret", time.Minute
	spec.Keeper = k
	p := startPane(t, spec)
	sent := time.Now() // the program's last output (its answer to m1) comes after this
	p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): before the restart"})
	waitPrompts(t, logPath, 1)
	var before Screen
	poll.For(t, 30*time.Second, func() error {
		before = p.Screen()
		return poll.Want(strings.Contains(before.Text(), "● received") && p.Status().State == StateReady, "the answer and a ready pane; screen:\n%s", before.Text())
	})
	last := p.Status().LastActivity
	leaveToHost(t, p, k)
	adopting := time.Now()
	p2 := startPane(t, spec)
	st := p2.Status()
	if !st.Adopted {
		t.Fatalf("the second pane did not adopt the program: %+v", st)
	}
	after := p2.Screen()
	for _, row := range before.Lines {
		if row != "" && !strings.Contains(after.Text(), row) {
			t.Errorf("the adopted pane's screen lacks the row %q; it shows:\n%s\nbefore:\n%s", row, after.Text(), before.Text())
		}
	}
	// The tail records the time of its last chunk, the pane its last
	// activity a moment after: equal up to that moment (2–35 ms apart
	// under load), so the bounds are the message's sending and the
	// adoption.
	if st.LastActivity.After(adopting) || st.LastActivity.Before(sent) {
		t.Errorf("the adopted pane's last activity is %v, want the program's last output (%v as the first pane saw it), after m1 was sent at %v and before the adoption at %v", st.LastActivity, last, sent, adopting)
	}
	p2.Enqueue(Delivery{MessageID: "m2", Content: "(ARCH #2): after the restart"})
	if ps := waitPrompts(t, logPath, 2); !strings.Contains(ps[1].Prompt, "after the restart") {
		t.Errorf("the second prompt is %q", ps[1].Prompt)
	}
	if d := p2.Status().Drift; d != nil {
		t.Errorf("the adopted pane was typed into on the unmarked wait: %s", d.Warning())
	}
}

// TestAdoptedPaneRedrawn: the screen a hub rebuilds from the screen tail
// can be wrong (a killed hub read output it never put into the tail, and a
// program that draws only what changed then draws onto the wrong cells:
// a loaded real-CLI run saw Claude Code's input row rebuilt as its
// banner's, and every message after it "did not show" until stuck). The
// adopting pane makes the program draw its screen again, so the stale
// rows go. Before, a pane with a tail to replay was not redrawn.
func TestAdoptedPaneRedrawn(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_TUI=1", "FAKEAGENT_TUI_DIFF=1", "FAKEAGENT_ECHO=1")
	spec.Timing = hardTiming("│ > ", true, true)
	k := testKeeper()
	k.SocketDir, k.Root, k.Secret, k.Grace = filepath.Join(spec.Dir, "panes"), "/the/root", "the-secret", time.Minute
	spec.Keeper = k
	p := startPane(t, spec)
	p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): before the restart"})
	waitPrompts(t, logPath, 1)
	leaveToHost(t, p, k)
	// The tail the killed hub left, wrong: a screen the program never drew.
	const stale = "STALE ROW the program never drew"
	tail, err := createScreenTail(screenTailPath(k.SocketDir, p.spec.Role), ScreenTailBytes, []byte("\x1b[2J\x1b[H"+stale+"\r\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tail.close(false)
	p2 := startPane(t, spec)
	if !p2.Status().Adopted {
		t.Fatalf("the second pane did not adopt the program: %+v", p2.Status())
	}
	poll.For(t, 30*time.Second, func() error {
		s := p2.Screen().Text()
		return poll.Want(!strings.Contains(s, stale) && strings.Contains(s, "│ > ") && strings.Contains(s, "(ARCH #1): before the"),
			"the program's own screen, drawn again; the pane shows:\n%s", s)
	})
	p2.Enqueue(Delivery{MessageID: "m2", Content: "(ARCH #2): after the restart"})
	if ps := waitPrompts(t, logPath, 2); !strings.Contains(ps[1].Prompt, "after the restart") {
		t.Errorf("the second prompt is %q", ps[1].Prompt)
	}
}

// leaveToHost leaves p's program to its pane host, as a hub killed with -9
// does, and checks after the adopting pane stopped (cleanups run last
// first) that the host, this process's child, ended with its last pane.
func leaveToHost(t *testing.T, p *Pane, k *Keeper) {
	t.Helper()
	p.mu.Lock()
	host := p.proc.keeper
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wantHostGone(t, host, HostSocket(k.SocketDir)) })
}
