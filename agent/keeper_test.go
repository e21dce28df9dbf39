package agent

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// keeperTestEnv makes the test binary a pane keeper (TestMain).
const keeperTestEnv = "HM_AGENT_TEST_KEEPER"

// testKeeper runs this test binary as the keeper.
func testKeeper() *Keeper {
	return &Keeper{Argv: []string{os.Args[0]}, Env: []string{keeperTestEnv + "=1"}}
}

// startKept starts spec's program as a hub would, beside its keeper, and
// waits for the fake agent's banner; exited closes when the program was
// reaped, drained when the master's reader (copying to nowhere) ended.
func startKept(t *testing.T, spec *Spec) (pr *proc, exited, drained chan struct{}) {
	t.Helper()
	pr, err := startProc(spec, spec.Command, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	if pr.keeperErr != nil {
		t.Fatal(pr.keeperErr)
	}
	exited = make(chan struct{})
	go func() {
		_ = pr.cmd.Wait()
		close(exited)
	}()
	out := &testutil.SyncBuffer{}
	drained = make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = pr.master.WriteTo(out)
	}()
	poll.For(t, 10*time.Second, func() error {
		if !strings.Contains(out.String(), "fakeagent ready") {
			return fmt.Errorf("no banner yet: %q", out.String())
		}
		return nil
	})
	return pr, exited, drained
}

// TestKeeperHoldsTerminalAfterHubDeath: a message typed with its Enter
// while the program was busy, just before the hub died (its PTY master
// and the keeper's channel closed with the process, the program not
// signalled), is still taken by the program when a keeper holds the
// terminal: the keeper drains the program's output and hangs the terminal
// up only after KeeperGrace. Without a keeper the kernel hangs it up at
// once and the program dies with the message unread: the loss the kill -9
// loop test met (a session message typed and entered, in the entered log,
// never submitted).
func TestKeeperHoldsTerminalAfterHubDeath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		keeper     bool
		wantSecond bool
		busy       string // ms the program reads nothing after a prompt
	}{
		// Within the keeper's grace, so the program reads the second
		// message before the terminal is hung up.
		{"with a keeper", true, true, "500"},
		// The kernel hangs the terminal up at once. (Run under nohup,
		// this case failed until pane programs got SIGHUP's default
		// action back: TestHangupUnderNohup.)
		// Its busy spell outlasts the 10 s the test gives the hangup, so
		// a program that ignored it would be caught.
		{"without a keeper", false, false, "20000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Every Enter submits (no newline window); after each prompt the
			// program is busy for tc.busy and reads nothing.
			spec, logPath := fakeSpec(t, "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_BUSY_MS="+tc.busy, "FAKEAGENT_NO_PASTE=1")
			if tc.keeper {
				spec.Keeper = testKeeper()
			}
			pr, exited, drained := startKept(t, &spec)
			if _, err := pr.master.Write([]byte("first\r")); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 10*time.Second, func() error {
				if ps := readPrompts(t, logPath); len(ps) != 1 || ps[0].Prompt != "first" {
					return fmt.Errorf("prompts %+v, want first", ps)
				}
				return nil
			})
			// Busy now: the second message waits in the terminal.
			if _, err := pr.master.Write([]byte("second\r")); err != nil {
				t.Fatal(err)
			}
			// The hub dies: its descriptors close; nobody signals the program.
			pr.master.Close()
			<-drained
			if pr.keeper != nil {
				pr.keeper.ch.Close()
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = signalGroup(pr.pid, syscall.SIGKILL)
				<-exited
				t.Fatal("the program outlived its terminal by 10 s")
			}
			if pr.keeper != nil {
				pr.keeper.stop()
			}
			var got []string
			for _, p := range readPrompts(t, logPath) {
				got = append(got, p.Prompt)
			}
			second := len(got) == 2 && got[1] == "second"
			switch {
			case len(got) == 0 || got[0] != "first":
				t.Fatalf("prompts %q; want first", got)
			case tc.wantSecond && !second:
				t.Fatalf("prompts %q; want the second one submitted", got)
			case !tc.wantSecond && second:
				// The loss the keeper prevents is the kernel's doing; in a
				// full -race run some process of another test may hold the
				// terminal a moment longer and the program read it. What
				// this case holds to is that the program ended with its
				// terminal (above).
				t.Logf("without a keeper the program still took the second message: %q", got)
			}
		})
	}
}
