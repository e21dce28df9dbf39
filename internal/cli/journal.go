package cli

import (
	"context"
	"fmt"
	"os"

	"hm/journal"
)

// The synopses of hm journal's subcommands.
const (
	verifySynopsis     = "hm journal verify [--root D] [--json] [--checkpoint FILE]"
	checkpointSynopsis = "hm journal checkpoint [--root D]"
)

// runJournalVerify: `hm journal verify` recomputes the keyed chain (SPEC
// §9), optionally against a checkpoint kept elsewhere; exit 1 names the
// first bad row.
func runJournalVerify(ctx context.Context, env Env, args []string) int {
	fs := newFlags("journal verify", env)
	root := rootFlag(fs)
	asJSON := jsonFlag(fs, "the result")
	cpFile := fs.String("checkpoint", "", "a checkpoint from `hm journal checkpoint` (or handoffs/ledger-checkpoint.json): the ledger must still hold its head")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, verifySynopsis, err)
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal verify:", err)
		return ExitFailed
	}
	var opts journal.VerifyOptions
	if *cpFile != "" {
		data, err := os.ReadFile(*cpFile)
		if err != nil {
			fmt.Fprintln(env.Stderr, "hm journal verify:", err)
			return ExitFailed
		}
		cp, err := journal.ParseCheckpoint(data)
		if err != nil {
			fmt.Fprintf(env.Stderr, "hm journal verify: %s: %v\n", *cpFile, err)
			return ExitFailed
		}
		opts.Checkpoint = &cp
	}
	l, err := openLedger(ctx, lay)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal verify:", err)
		return ExitFailed
	}
	defer l.Close()
	rep, err := l.VerifyWith(ctx, opts)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal verify:", err)
		return ExitFailed
	}
	switch {
	case *asJSON:
		printJSON(env.Stdout, rep)
	case rep.OK:
		fmt.Fprintf(env.Stdout, "ok: %d events and %d messages verified with ledger key %s", rep.Events, rep.Messages, rep.KeyID)
		if rep.Legacy > 0 {
			fmt.Fprintf(env.Stdout, " (the first %d events with the unkeyed rule of older versions)", rep.Legacy)
		}
		if rep.Foreign > 0 {
			fmt.Fprintf(env.Stdout, "; %d rows recorded by other programs (SquidRun's hm-send.js) are not covered", rep.Foreign)
		}
		if rep.Checkpoint != "" {
			fmt.Fprintf(env.Stdout, "; checkpoint %s", rep.Checkpoint)
		}
		fmt.Fprintln(env.Stdout)
	default:
		fmt.Fprintf(env.Stdout, "FAILED: %s (%d problems in %d events, %d messages)\n", rep.FirstBad, rep.Problems, rep.Events, rep.Messages)
	}
	if !rep.OK {
		return ExitFailed
	}
	return ExitOK
}

// runJournalCheckpoint: `hm journal checkpoint` verifies the ledger and
// prints a signed checkpoint of its head (JSON) to keep elsewhere.
func runJournalCheckpoint(ctx context.Context, env Env, args []string) int {
	fs := newFlags("journal checkpoint", env)
	root := rootFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, checkpointSynopsis, err)
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal checkpoint:", err)
		return ExitFailed
	}
	l, err := openLedger(ctx, lay)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal checkpoint:", err)
		return ExitFailed
	}
	defer l.Close()
	// Never sign a head that does not verify.
	rep, err := l.Verify(ctx)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal checkpoint:", err)
		return ExitFailed
	}
	if !rep.OK {
		fmt.Fprintf(env.Stderr, "hm journal checkpoint: the ledger does not verify, nothing signed: %s\n", rep.FirstBad)
		return ExitFailed
	}
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm journal checkpoint:", err)
		return ExitFailed
	}
	printJSON(env.Stdout, cp)
	return ExitOK
}
