package agent

import (
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

	sock := KeeperSocket(sockDir, "builder")
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keeper socket %s: %v, %v; want mode 0600", sock, st, err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, root, pane, secret string }{
		{"another secret", root, "builder", "another-secret"},
		{"another root", "/another/root", "builder", secret},
		{"another pane", root, "oracle", secret},
	} {
		a, err := AdoptKeeper(ctx, KeeperDial{Socket: sock, Root: tc.root, Pane: tc.pane, Secret: tc.secret})
		if !errors.Is(err, ErrKeeperRefused) {
			if a != nil {
				a.Release()
			}
			t.Fatalf("%s: adopt = %v, want ErrKeeperRefused", tc.name, err)
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
	if !strings.Contains(string(a.Output), "received 6 bytes: second") {
		t.Errorf("buffered output %q lacks the answer to the second prompt", a.Output)
	}
	typeAndWait(t, a.Master, logPath, "third", 3)
	a.keeper().stop()
	if procAlive(pr.keeper.pid) {
		t.Error("the adopted keeper outlived stop")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("keeper socket after stop: %v, want removed", err)
	}
	<-pr.keeper.done
}

// TestAdoptKeeperNone: no socket, or one nobody listens on (removed), is
// ErrNoKeeper.
func TestAdoptKeeperNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := KeeperSocket(dir, "stale")
	ln, err := listenKeeper(stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.ln.Close() // a keeper killed: its socket file stays
	for _, sock := range []string{KeeperSocket(dir, "none"), stale} {
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
