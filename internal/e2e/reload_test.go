package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestReloadAddRemoveMidStream (#37): hm reload, while messages stream
// into two panes, applies a settings.json that removes a third pane and
// adds a fourth. The unchanged panes keep their programs and get every
// message exactly once; the removed pane's program ends and it is no
// longer listed; the added pane starts and gets its messages once.
func TestReloadAddRemoveMidStream(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	kept := []string{"architect", "builder"}
	writeSettings(t, root, adoptTeamWith(root, "", []string{"architect", "builder", "gone"}))
	h := startHub(t, root, "--rate-limit", "0")
	before := panePIDsOf(t, h, []string{"architect", "builder", "gone"})
	waitSessionLines(t, root, kept...)

	s := startStream(t, root, "reload", 60, kept...)
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(s.acked.Load() >= 20, "20 of the stream acknowledged (%d)", s.acked.Load())
	})
	writeSettings(t, root, adoptTeamWith(root, "", []string{"architect", "builder", "fresh"}))
	r := run(t, root, nil, "hm", "reload")
	if r.code != 0 || !strings.Contains(r.stdout, "added: fresh") || !strings.Contains(r.stdout, "removed: gone") || !strings.Contains(r.stdout, "unchanged: architect, builder") {
		t.Fatalf("hm reload: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if n := s.acked.Load(); n >= 60 {
		t.Logf("the stream ended before the reload answered (%d acknowledged)", n)
	}

	waitProgramsGone(t, map[string]int{"gone": before["gone"]}, "after hm reload removed its pane")
	poll.For(t, 30*time.Second, func() error {
		st, err := fetchStatus(t, h)
		if err != nil {
			return err
		}
		_, _, _, listed := st.pane("gone")
		return poll.Want(!listed, "the removed pane no longer listed")
	})
	fresh := startStream(t, root, "fresh", 5, "fresh")
	s.wait(t)
	fresh.wait(t)
	after := panePIDsOf(t, h, []string{"architect", "builder", "fresh"})
	for _, r := range kept {
		if after[r] != before[r] {
			t.Errorf("pane %s: program pid %d after hm reload, was %d: an unchanged pane was restarted", r, after[r], before[r])
		}
	}
	if syscall.Kill(after["fresh"], 0) != nil {
		t.Errorf("the added pane's program %d does not run", after["fresh"])
	}
	for _, r := range []string{"architect", "builder", "fresh"} {
		waitQueueDrained(t, h, r)
	}
	s.wantTypedOnce(t, root)
	fresh.wantTypedOnce(t, root)
	for _, p := range readPrompts(t, root+"/gone.jsonl") {
		if strings.Contains(p.Prompt, "[hm:") && !strings.Contains(p.Prompt, "SQUIDRUN SESSION") {
			t.Errorf("the removed pane was typed a message: %q", p.Prompt)
		}
	}
	if t.Failed() {
		t.Logf("hub log:\n%s", hubLog(root))
	}
	h.stop()
	waitProgramsGone(t, after, "after SIGTERM of the hub")
}
