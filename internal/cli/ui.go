package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"hm/internal/cockpit"
)

const uiSynopsis = "hm ui [--root D] [--port N] [--json]"

// runUI: `hm ui` asks the running hub for a one-time login code and
// prints the cockpit's login URL (docs/protocol.md §17).
func runUI(ctx context.Context, env Env, args []string) int {
	fs := newFlags("ui", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	asJSON := jsonFlag(fs, "the code, URL and expiry")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, uiSynopsis, err)
	}
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm ui:", err)
		return ExitFailed
	}
	code, err := fetchLoginCode(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm ui:", err)
		return ExitFailed
	}
	if *asJSON {
		printJSON(env.Stdout, code)
		return ExitOK
	}
	fmt.Fprintln(env.Stdout, code.URL)
	fmt.Fprintf(env.Stderr, "open it in a browser on this machine; it logs in once, until %s\n", code.ExpiresAt)
	return ExitOK
}

// fetchLoginCode asks the hub cfg finds for a login code (POST /ui/code).
func fetchLoginCode(ctx context.Context, cfg clientConfig) (cockpit.CodeResponse, error) {
	var cr cockpit.CodeResponse
	if err := hubJSON(ctx, http.MethodPost, cfg, "/ui/code", cfg.token, 5*time.Second, &cr); err != nil {
		return cr, err
	}
	if cr.URL == "" {
		return cr, errors.New("the hub's answer has no login URL")
	}
	return cr, nil
}
