package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hm/agent"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
)

// stream sends messages to its targets in turn, one every 10 ms, through
// whichever hub hub.json names at the time: a send that fails (its hub
// stopping) is sent again, with the same id, to the next hub, which
// answers a message the first one had taken with its first copy's state
// (a duplicate id from the same sender). Its goroutine ends with the
// stream or the test.
type stream struct {
	ids     []string
	targets []string // ids[i] goes to targets[i%len(targets)]
	acked   atomic.Int64
	done    chan error
}

// startStream sends n messages <prefix>-<i> to targets in the background.
func startStream(t *testing.T, root, prefix string, n int, targets ...string) *stream {
	t.Helper()
	s := &stream{targets: targets, done: make(chan error, 1)}
	for i := range n {
		s.ids = append(s.ids, fmt.Sprintf("%s-%03d", prefix, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	go func() { s.done <- s.run(ctx, layout.Layout{Root: root}) }()
	t.Cleanup(func() {
		cancel()
		<-s.done
		s.done <- nil
	})
	return s
}

func (s *stream) run(ctx context.Context, lay layout.Layout) error {
	var c *client.Client
	defer func() {
		if c != nil {
			c.CloseNow()
		}
	}()
	for i := 0; i < len(s.ids); {
		if ctx.Err() != nil {
			return fmt.Errorf("%s never acknowledged: %w", s.ids[i], ctx.Err())
		}
		if c == nil {
			var err error
			if c, err = dialRoot(ctx, lay); err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ack, _, err := c.Send(sctx, proto.Frame{Type: proto.TypeSend, Target: s.targets[i%len(s.targets)], MessageID: s.ids[i], Content: "stream message " + s.ids[i]})
		cancel()
		if err != nil {
			c.CloseNow()
			c = nil
			continue
		}
		if !ack.OK {
			return fmt.Errorf("send %s: %+v", s.ids[i], ack)
		}
		i++
		s.acked.Add(1)
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// wait waits for the stream's end and fails t if a message was refused or
// never acknowledged.
func (s *stream) wait(t *testing.T) {
	t.Helper()
	err := <-s.done
	s.done <- nil
	if err != nil {
		t.Fatalf("the stream: %v", err)
	}
}

// dialRoot connects to the hub running on lay's root as the operator.
func dialRoot(ctx context.Context, lay layout.Layout) (*client.Client, error) {
	info, err := lay.ReadHubInfo()
	if err != nil {
		return nil, err
	}
	tok, err := lay.ReadToken()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/", info.Port))
	if err != nil {
		return nil, err
	}
	if _, err := c.Register(ctx, "user", tok, false); err != nil {
		c.CloseNow()
		return nil, err
	}
	return c, nil
}

// wantTypedOnce fails t for each of the stream's ids not typed exactly
// once into its pane: by the program's own record, and by the ledger (its
// row routed; its events may repeat "typed", as a text typed but not
// entered when a hub stopped is erased and typed again, and "submitted",
// once unproven and once proven).
func (s *stream) wantTypedOnce(t *testing.T, root string) {
	t.Helper()
	counts := map[string]map[string]int{}
	for _, r := range s.targets {
		counts[r] = trailerCounts(readPrompts(t, root+"/"+r+".jsonl"))
	}
	withLedger(t, root, func(l *journal.Ledger) {
		for i, id := range s.ids {
			r := s.targets[i%len(s.targets)]
			if n := counts[r][id]; n != 1 {
				t.Errorf("%s typed into %s %d times, want once", id, r, n)
			}
			m, err := l.Get(context.Background(), id)
			if err != nil {
				t.Errorf("%s: not in the ledger: %v", id, err)
				continue
			}
			if m.Status == status.Routed {
				continue
			}
			evs, err := l.Events(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var trail []string
			for _, e := range evs {
				trail = append(trail, fmt.Sprintf("%s %s", e.Event, e.Detail))
			}
			t.Errorf("%s: the ledger says %s, want routed: %s", id, m.Status, strings.Join(trail, "; "))
		}
	})
}

// TestRestartRebuiltBinaryMidStream (#37): `hm restart` run by another
// build of hm (its version stamped apart) while 100 messages stream into
// three panes: the old hub exits 0, the new one adopts every pane (the
// same programs), each message is typed exactly once, and hm status names
// the new build's version.
func TestRestartRebuiltBinaryMidStream(t *testing.T) {
	t.Parallel()
	const newVersion = "v0.0.0-restart-test"
	newHM := hmVariant(t, "restart", "hm/internal/ground/buildinfo.stamp="+newVersion)
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root, "--rate-limit", "0")
	before := panePIDs(t, h)
	waitSessionLines(t, root, adoptRoles...)
	oldVersion := cliStatus(t, root).Hub.Version
	if oldVersion == newVersion {
		t.Fatalf("the first hub already says %s", newVersion)
	}

	s := startStream(t, root, "upgrade", 100, adoptRoles...)
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(s.acked.Load() >= 40, "40 of the stream acknowledged (%d)", s.acked.Load())
	})
	h2 := startHubBin(t, newHM, root, "restart", nil, "--rate-limit", "0")
	waitExit0(t, h, "hm restart")
	if n := s.acked.Load(); n >= 100 {
		t.Logf("the stream ended before the restart (%d acknowledged): not mid-stream", n)
	}
	s.wait(t)
	after := panePIDs(t, h2)
	wantAdopted(t, before, after, "hm restart with another build")
	for _, r := range adoptRoles {
		waitQueueDrained(t, h2, r)
	}
	s.wantTypedOnce(t, root)

	st := cliStatus(t, root)
	if st.Hub.Version != newVersion {
		t.Errorf("hm status --json: hub version %q, want the new build's %q (the old one was %q)", st.Hub.Version, newVersion, oldVersion)
	}
	for _, p := range st.Panes {
		if p.Origin != "adopted" || p.Restarts != 0 {
			t.Errorf("hm status --json: pane %s origin %q, restarts %d; want adopted, no restart", p.Role, p.Origin, p.Restarts)
		}
	}
	if r := run(t, root, nil, "hm", "status"); !strings.Contains(r.stdout, "(hm "+newVersion+")") {
		t.Errorf("hm status does not name the hub's version %s:\n%s", newVersion, r.stdout)
	}
	if t.Failed() {
		t.Logf("hub log:\n%s", hubLog(root))
	}
	h2.stop()
	waitProgramsGone(t, before, "after SIGTERM of the new hub")
}

// TestCtrlCStopsPanesAndSaysHowToKeepThem (#37): SIGINT to hm up (Ctrl-C)
// still ends the hub and its panes' programs, and the hub's terminal says,
// as it stops, how to stop it keeping the panes instead (hm restart,
// SIGUSR1).
func TestCtrlCStopsPanesAndSaysHowToKeepThem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root)
	pids := panePIDs(t, h)
	signalExit0(t, h, syscall.SIGINT)
	waitProgramsGone(t, pids, "after Ctrl-C")
	// What the terminal showed once the hub was up: the hint belongs to
	// the stop, not only to the start line.
	_, after, _ := strings.Cut(h.log.String(), "hm: hub listening")
	_, after, _ = strings.Cut(after, "\n")
	if !strings.Contains(after, "hm restart") || !strings.Contains(after, fmt.Sprintf("kill -USR1 %d", h.cmd.Process.Pid)) {
		t.Errorf("on Ctrl-C, hm up does not say how to keep the panes (hm restart, kill -USR1 %d); its terminal after the start line:\n%s", h.cmd.Process.Pid, after)
	}
}

// TestRestartOtherProtocolRefused (#37): two builds of hm whose pane
// hand-over protocols differ (agent.PaneProtocol, stamped apart as a later
// hm would be), either way round. hm restart by the other build refuses
// before touching the running hub, naming both versions and protocols: the
// hub and its programs run on. After a kill -9 of that hub, the other
// build's hm up refuses its pane host the same way instead of misreading
// its hand-over: its panes start fresh (the first refused starts a new
// host, which the others then find holding none of them), the refused
// host's programs are left alone and end after their grace.
//
// (Its names are short: the pane host's socket path, under the test's
// root, must fit a unix socket address.)
func TestRestartOtherProtocolRefused(t *testing.T) {
	t.Parallel()
	const otherVersion = "v0.0.0-protocol-test"
	other := func(t *testing.T) string {
		return hmVariant(t, "protocol", "hm/agent.paneProtocol=test-next", "hm/internal/ground/buildinfo.stamp="+otherVersion)
	}
	plain := func(t *testing.T) string {
		bin, _ := hmBinary(t, "hm")
		return bin
	}
	for _, tc := range []struct {
		name                   string
		old, new               func(*testing.T) string
		oldVersion, newVersion string
		oldProto, newProto     string
	}{
		{"older", other, plain, otherVersion, "devel", "test-next", agent.PaneProtocol()},
		{"later", plain, other, "devel", otherVersion, agent.PaneProtocol(), "test-next"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oldBin, newBin := tc.old(t), tc.new(t)
			root := t.TempDir()
			writeSettings(t, root, adoptTeam(root, `"paneKeepMinutes":0.1,`))
			h := startHubBin(t, oldBin, root, "up", nil)
			before := panePIDs(t, h)
			r := run(t, root, nil, newBin, "restart", "--port", "0")
			// names says both builds' versions and protocols.
			names := func(s string) bool {
				return strings.Contains(s, "(hm "+tc.oldVersion+") speaks pane protocol "+tc.oldProto) &&
					strings.Contains(s, "(hm "+tc.newVersion+") speaks pane protocol "+tc.newProto)
			}
			if r.code != 1 || !names(r.stderr) {
				t.Fatalf("hm restart of the other build: exit %d, stderr %q; want exit 1 naming both builds' versions and pane protocols", r.code, r.stderr)
			}
			if exited(h) {
				t.Fatalf("the running hub stopped although hm restart refused:\n%s", h.log.String())
			}
			wantAdopted(t, before, panePIDs(t, h), "a refused hm restart")
			typeOnceEach(t, h, root, "kept")

			h.kill()
			h2 := startHubBin(t, newBin, root, "up", nil)
			after := panePIDs(t, h2)
			for _, r := range adoptRoles {
				if after[r] == before[r] {
					t.Errorf("pane %s adopted (pid %d) from a pane host of another pane protocol", r, after[r])
				}
			}
			refused, named := 0, 0
			for _, line := range strings.Split(hubLog(root), "\n") {
				if strings.Contains(line, "keeper was not adopted") {
					refused++
					if names(line) {
						named++
					}
				}
			}
			if refused == 0 || named != refused {
				t.Errorf("the hub log refuses the pane host %d times, %d of them for its pane protocol with both versions named; want at least once, each so:\n%s", refused, named, hubLog(root))
			}
			typeOnceEach(t, h2, root, "fresh")
			h2.stop()
			waitProgramsGone(t, before, "after their refused host's grace")
		})
	}
}

// TestLeavePanesDeepRoot (#37): on a root so deep that the pane host's
// socket under runtime/panes would not fit a unix socket address (104
// bytes on macOS, 108 on Linux), the panes are still left to the host and
// adopted by the next hub (same pids, each message typed once). Before
// the fix the host could not listen (EINVAL, unseen: its stderr is
// /dev/null), the next hub's dial failed with "invalid argument", and
// every program was restarted.
func TestLeavePanesDeepRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), strings.Repeat("deep-", 14))
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if n := len(filepath.Join(layout.Layout{Root: root}.PaneLogs(), layout.PaneHostSocketName)); n <= layout.SocketPathMax {
		t.Fatalf("the root is not deep enough: its socket path is %d bytes", n)
	}
	writeSettings(t, root, adoptTeam(root, ""))
	h := startHub(t, root)
	before := panePIDs(t, h)
	signalExit0(t, h, syscall.SIGUSR1)
	h2 := startHub(t, root)
	wantAdopted(t, before, panePIDs(t, h2), "SIGUSR1 on a deep root")
	if t.Failed() {
		t.Fatalf("hub log:\n%s", hubLog(root))
	}
	typeOnceEach(t, h2, root, "deep")
	h2.stop()
	waitProgramsGone(t, before, "after SIGTERM of the hub")
}
