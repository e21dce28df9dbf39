package hub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
	"hm/internal/hub"
	"hm/roles"
)

// TestIdleHubNoTimers: with every pane ready and nothing queued, the
// handoff writer, the waiting-for-a-person watch and the status line look
// at nothing on a clock however short their periods (#36); a message
// committed wakes the handoff writer and the status line again.
func TestIdleHubNoTimers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	settings := fmt.Sprintf(`{"panes":[
	 {"role":"architect","transport":"ws"},
	 {"role":"builder","command":%q},
	 {"role":"oracle","transport":"ws"}]}`, agentCmd(root, "builder"))
	const every = 20 * time.Millisecond
	th := startHubAt(t, root, hubConfig{settings: settings, opts: func(o *hub.Options) {
		o.HandoffEvery = every
		o.WaitingNotice = 5 * every // looks every 20 ms while a spell needs them
	}})
	ctx, cancel := context.WithCancel(context.Background())
	var line testutil.SyncBuffer
	var wg sync.WaitGroup
	wg.Go(func() { th.h.WatchTerminal(ctx, &line, every, func() int { return 0 }) })
	defer func() { cancel(); wg.Wait() }()

	idle := func(phase string) {
		t.Helper()
		poll.For(t, 20*time.Second, func() error {
			st := th.h.Snapshot(ctx)
			for _, p := range st.Panes {
				if p.State != "ready" || p.Queued > 0 {
					return fmt.Errorf("%s: pane %s %s, %d queued", phase, p.Role, p.State, p.Queued)
				}
			}
			return nil
		})
		var before [3]int64
		poll.For(t, 20*time.Second, func() error { // the looks of the last change are over
			var now [3]int64
			now[0], now[1], now[2] = th.h.Looks()
			time.Sleep(10 * every)
			if now != before {
				before = now
				return fmt.Errorf("%s: still looking: handoff, waiting, line %v", phase, now)
			}
			return nil
		})
		time.Sleep(20 * every)
		var after [3]int64
		after[0], after[1], after[2] = th.h.Looks()
		if after != before {
			t.Fatalf("%s, idle: looks (handoff, waiting watch, status line) went from %v to %v", phase, before, after)
		}
	}
	idle("started")
	handoff, _, terminal := th.h.Looks()
	if _, err := th.h.Broker.Submit(ctx, broker.Submission{From: roles.RoleUser, Target: "architect", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 20*time.Second, func() error {
		h, _, l := th.h.Looks()
		return poll.Want(h > handoff && l > terminal, "a commit wakes the handoff writer (%d → %d) and the status line (%d → %d)", handoff, h, terminal, l)
	})
	idle("after a message")
}
