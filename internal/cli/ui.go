package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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
	code, err := fetchLoginCode(ctx, cfg.port, cfg.token)
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

// fetchLoginCode asks the hub on port for a login code (POST /ui/code).
func fetchLoginCode(ctx context.Context, port int, token string) (cockpit.CodeResponse, error) {
	var cr cockpit.CodeResponse
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(port)+"/ui/code", nil)
	if err != nil {
		return cr, fmt.Errorf("login code request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cr, fmt.Errorf("hub not reachable on port %d (is `hm up` running?): %w", port, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return cr, fmt.Errorf("read the hub's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return cr, fmt.Errorf("hub answered %s: %s", resp.Status, shorten(msg, 300))
	}
	if err := json.Unmarshal(body, &cr); err != nil {
		return cr, fmt.Errorf("decode the hub's answer %q: %w", shorten(string(body), 200), err)
	}
	if cr.URL == "" {
		return cr, fmt.Errorf("the hub's answer has no URL: %q", shorten(string(body), 200))
	}
	return cr, nil
}

// shorten cuts s to at most n bytes for an error message.
func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
