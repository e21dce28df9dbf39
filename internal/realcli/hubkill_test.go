package realcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/layout"
)

// The hubkill case's stream: hubKillStream messages to the pane, sent back
// to back, the hub killed once the hubKillAt-th is acknowledged (some
// typed, the rest queued). 17 in each of the suite's six panes is 102 in
// all, issue #37's hundred, and keeps the suite's time: the model answers
// each turn in 200 ms.
const hubKillStream, hubKillAt = 17, 8

// streamWait bounds the wait for the whole stream to reach the model.
const streamWait = 3 * time.Minute

// caseHubKill: the hub is killed with SIGKILL in the middle of a stream of
// messages and `hm up` runs again on the root (#37). The new hub adopts
// the pane from its host: the same program (pid), `hm status --json` says
// adopted and no restart; every message of the stream reaches the model
// exactly once, intact and alone, and its final stage in the ledger is
// true.
func caseHubKill(t *testing.T, r *paneRun) {
	before, err := r.hub.pane(context.Background())
	if err != nil || before.PID <= 0 {
		t.Fatalf("builder's pane before the kill: %+v %v", before, err)
	}
	var ms []sentMsg
	stream := func(from, to int) {
		for i := from; i <= to; i++ {
			ms = append(ms, r.send(t, fmt.Sprintf("stream message %d of %d across a hub kill", i, hubKillStream)))
		}
	}
	stream(1, hubKillAt)
	hubLog := layout.Layout{Root: r.root}.HubLog()
	r.hub.kill(t)
	killed := time.Now()
	st, err := os.Stat(hubLog)
	if err != nil {
		t.Fatal(err)
	}
	r.up(t)
	r.wantAdopted(t, before.PID, "after the new hub started")
	t.Logf("the new hub adopted the pane %v after the kill; its screen in hm attach then:\n%s", time.Since(killed).Round(time.Millisecond), r.view.screen())
	stream(hubKillAt+1, hubKillStream)
	r.awaitModel(streamWait, ms...)
	t.Logf("%d messages, %d sent to the killed hub: the last reached the model %v after the kill", len(ms), hubKillAt, time.Since(killed).Round(time.Millisecond))
	r.check(t, ms...)
	r.settle(t)
	r.wantAdopted(t, before.PID, "at the end of the stream")
	// The adopted pane's screen is rebuilt from its screen tail: the new
	// hub never types on the unmarked wait (a profile-drift warning).
	log, err := os.ReadFile(hubLog)
	if err != nil {
		t.Fatal(err)
	}
	if after := string(log[min(int(st.Size()), len(log)):]); strings.Contains(after, "no ready marker on a quiet screen") {
		t.Errorf("the adopted CLI was typed into on the unmarked wait:\n%s", after)
	}
}

// wantAdopted fails t unless `hm status --json` shows builder's pane
// running program pid, adopted, never restarted. It waits for the pane to
// run a program first (a new hub adopts it after it serves).
func (r *paneRun) wantAdopted(t *testing.T, pid int, when string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var p paneStatus
	var err error
	for {
		if p, err = r.statusPane(t); err == nil && p.PID > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hm status --json %s: builder's pane runs no program: %+v %v\n%s", when, p, err, r.evidence())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p.PID != pid || !p.Adopted || p.Origin != "adopted" || p.Restarts != 0 {
		t.Errorf("hm status --json %s: builder's pane runs pid %d (was %d), adopted %v, origin %q, %d restarts; want the same program adopted, no restart\n%s",
			when, p.PID, pid, p.Adopted, p.Origin, p.Restarts, r.evidence())
	}
}

// statusPane is builder's pane in `hm status --json`.
func (r *paneRun) statusPane(t testing.TB) (paneStatus, error) {
	out := runHM(t, r.root, "status", "--json")
	var st struct {
		Panes []paneStatus `json:"panes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return paneStatus{}, fmt.Errorf("hm status --json: %w: %s", err, out)
	}
	for _, p := range st.Panes {
		if p.Role == "builder" {
			return p, nil
		}
	}
	return paneStatus{}, fmt.Errorf("hm status --json: no builder pane: %s", out)
}
