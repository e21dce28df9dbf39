package cli

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"hm/agent"
	"hm/internal/ground/layout"
)

const restartSynopsis = "hm restart [hm up's flags]"

// restartWait bounds how long hm restart waits for the running hub to
// stop.
const restartWait = 60 * time.Second

// runRestart stops the root's running hub leaving its panes' programs to
// the root's pane host (SIGUSR1, see hm up) and runs a new hub in the
// foreground, which adopts them: the programs keep running, also across an
// upgrade of hm.
func runRestart(ctx context.Context, env Env, args []string) int {
	return upCommand(ctx, env, args, "restart", restartSynopsis, leaveRunningHub)
}

// leaveRunningHub asks the hub running on lay's root, if any, to stop
// leaving its panes, and waits until it has released the root.
func leaveRunningHub(ctx context.Context, env Env, lay layout.Layout) error {
	cfg, err := discover(env, lay.Root, 0, "")
	if err != nil {
		return err
	}
	tok, _ := lay.ReadToken()
	st, err := fetchStatus(ctx, cfg, tok)
	if err != nil {
		fmt.Fprintf(env.Stderr, "hm restart: no hub answers on this root (%v); starting one\n", err)
		return nil
	}
	// A hub whose panes this build cannot adopt keeps running, and them.
	if err := agent.CheckPaneProtocol(st.Hub.PaneProtocol, st.Hub.Version, fmt.Sprintf("the running hub %d", st.Hub.PID), "this hm"); err != nil {
		return fmt.Errorf("%w; it keeps running, and its panes: run hm restart with the hm it runs, or stop it (Ctrl-C: its panes end) and run hm up", err)
	}
	if err := syscall.Kill(st.Hub.PID, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("ask hub %d to stop leaving its panes: %w", st.Hub.PID, err)
	}
	fmt.Fprintf(env.Stderr, "hm restart: hub %d stops, leaving its panes; starting the new hub\n", st.Hub.PID)
	deadline := time.Now().Add(restartWait)
	for {
		lock, err := lay.LockHub()
		if err == nil {
			return lock.Release()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hub %d still holds the root after %s: %w", st.Hub.PID, restartWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
