package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestStopKillsDaemonsThatLeftTheSession: a program that starts a daemon in
// a session of its own (setsid, as Codex CLI starts its app-server, which
// outlived the pane reparented to PID 1 in the real-CLI suite) does not
// leave it running once the pane stops: the daemon still carries the run's
// mark (RunMarkEnv) in its environment. Linux only: elsewhere hm cannot read
// another process's environment (docs/operations.md).
func TestStopKillsDaemonsThatLeftTheSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	command := `setsid sh -c 'trap "" HUP; echo $$ > daemon; exec sleep 300' </dev/null >/dev/null 2>&1 &
exec sleep 301`
	p := startPane(t, Spec{Command: command, Dir: dir, KillGrace: 300 * time.Millisecond})
	var daemon int
	poll.For(t, 10*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "daemon"))
		if err != nil {
			return fmt.Errorf("daemon pid: %v", err)
		}
		daemon, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return poll.Want(err == nil, "daemon pid in %q", b)
	})
	if st, ok := readProcStat(daemon); !ok || st.session == p.Status().PID {
		t.Fatalf("the daemon %d is in the pane's session (%+v): the case proves nothing", daemon, st)
	}
	ctx, cancel := contextWithTimeout(15 * time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(processGone(daemon), "the daemon %d that left the pane's session gone after Stop", daemon)
	})
}
