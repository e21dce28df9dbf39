package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hm/internal/hub"
)

const reloadSynopsis = "hm reload [--json]"

// reloadWait bounds hm reload's wait for the hub's answer: the removed and
// changed panes' programs end first (SIGHUP, SIGKILL after a grace).
const reloadWait = 2 * time.Minute

// runReload asks the root's running hub to read settings.json again and
// apply it (POST /reload with the operator token, hub.Hub.Reload), and
// prints what it did. Settings the hub refuses change nothing: the error,
// exit 1.
func runReload(ctx context.Context, env Env, args []string) int {
	fs := newFlags("reload", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	asJSON := jsonFlag(fs, "what the hub did")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", pos[0])
		}
		return usageError(env, fs, reloadSynopsis, err)
	}
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm reload:", err)
		return ExitFailed
	}
	tok, _ := cfg.layout.ReadToken() // the operator's: a pane's token may not reload
	var res hub.ReloadResult
	if err := hubJSON(ctx, http.MethodPost, cfg, "/reload", tok, reloadWait, &res); err != nil {
		var refused *hubRefusal
		if errors.As(err, &refused) && refused.code == http.StatusUnprocessableEntity {
			fmt.Fprintf(env.Stderr, "hm reload: %s\nhm reload: nothing was changed\n", refused.msg)
		} else {
			fmt.Fprintln(env.Stderr, "hm reload:", err)
		}
		return ExitFailed
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(env.Stderr, "hm reload: warning:", w)
	}
	if *asJSON {
		printJSON(env.Stdout, res)
		return ExitOK
	}
	printReload(env, res)
	return ExitOK
}

// printReload says what a reload did, one line per kind of change.
func printReload(env Env, res hub.ReloadResult) {
	lines := []struct {
		what  string
		roles []string
	}{
		{"added", res.Added},
		{"removed", res.Removed},
		{"restarted", res.Restarted},
		{"unchanged", res.Unchanged},
	}
	if len(res.Added)+len(res.Removed)+len(res.Restarted) == 0 {
		fmt.Fprintln(env.Stdout, "no pane changed")
	}
	for _, l := range lines {
		if len(l.roles) > 0 {
			fmt.Fprintf(env.Stdout, "%s: %s\n", l.what, strings.Join(l.roles, ", "))
		}
	}
	if len(res.NeedsRestart) > 0 {
		fmt.Fprintf(env.Stdout, "needs `hm restart` (the hub keeps the old values until then): %s\n", strings.Join(res.NeedsRestart, ", "))
	}
}
