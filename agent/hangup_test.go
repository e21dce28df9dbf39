package agent

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHangupUnderNohup: a hub started with SIGHUP ignored (nohup hm up)
// must not pass the ignoring on to its pane programs, or a program
// outlives its terminal's hangup. It runs the no-keeper case of
// TestKeeperHoldsTerminalAfterHubDeath in this test binary under nohup:
// before the fix the program outlived its master's close (and make test
// loops run under nohup failed that case, which a session took for a
// flake).
func TestHangupUnderNohup(t *testing.T) {
	t.Parallel()
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Fatalf("nohup (coreutils) is needed: %v", err)
	}
	cmd := exec.Command(nohup, os.Args[0], "-test.run", "^TestKeeperHoldsTerminalAfterHubDeath$/^without_a_keeper$", "-test.count=1", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKeeperHoldsTerminalAfterHubDeath/without_a_keeper") {
		t.Fatalf("under nohup: %v\n%s", err, out)
	}
}
