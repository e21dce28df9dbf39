package cli

import (
	"context"
	"fmt"
)

func notYet(name string) func(ctx context.Context, env Env, args []string) int {
	return func(ctx context.Context, env Env, args []string) int {
		fmt.Fprintf(env.Stderr, "hm %s: not available yet in this build\n", name)
		return ExitFailed
	}
}

var (
	runBg       = notYet("bg")
	runStatus   = notYet("status")
	runAttach   = notYet("attach")
	runComms    = notYet("comms")
	runBriefing = notYet("briefing")
	runHandoff  = notYet("handoff")
	runJournal  = notYet("journal")
	runReceipt  = notYet("receipt")
	runDoctor   = notYet("doctor")
)
