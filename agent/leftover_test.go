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

// TestStopKillsLeftoversOfEndedRuns: a program that ends on its own and
// leaves a child behind that ignores SIGHUP (in its process group, or in a
// group of its own in the pane's session, as Codex's app-server did) does
// not leave that child running once the pane stops, although the pane
// restarted the program in a new session meanwhile.
func TestStopKillsLeftoversOfEndedRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, leave string
	}{
		{"child in the program's group", `trap '' HUP; sleep 300 & echo $! > pid`},
		{"child in a group of its own", `set -m; sh -c 'trap "" HUP; echo $$ > pid; exec sleep 300' &`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The first run leaves its child and ends; the next runs stay.
			command := fmt.Sprintf(`if [ -e started ]; then exec sleep 301; fi; touch started
%s
sleep 0.2; exit 0`, tc.leave)
			p := startPane(t, Spec{Command: command, Dir: dir, Restart: true, MinBackoff: 50 * time.Millisecond,
				MaxBackoff: 100 * time.Millisecond, KillGrace: 300 * time.Millisecond})
			var child int
			poll.For(t, 10*time.Second, func() error {
				b, err := os.ReadFile(filepath.Join(dir, "pid"))
				if err != nil {
					return fmt.Errorf("child pid: %v", err)
				}
				child, err = strconv.Atoi(strings.TrimSpace(string(b)))
				return poll.Want(err == nil, "child pid in %q", b)
			})
			poll.For(t, 10*time.Second, func() error {
				s := p.Status()
				return poll.Want(s.Restarts >= 1 && s.PID != 0, "the program restarted: %+v", s)
			})
			ctx, cancel := contextWithTimeout(15 * time.Second)
			defer cancel()
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			poll.For(t, 5*time.Second, func() error {
				return poll.Want(processGone(child), "the first run's child %d gone after Stop", child)
			})
		})
	}
}
