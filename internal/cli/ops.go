package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"hm/internal/ground/status"

	"hm/agent"
	"hm/broker/proto"
	"hm/internal/hook"
	"hm/internal/hub"
	"hm/roles"
)

const bgSynopsis = "hm-bg spawn [N|alias] [--command C] [--task T] | list [--json] | kill <N|alias|paneId> | kill-all | map"

// bgActions are hm bg's actions (map is also target-map).
var bgActions = []string{"spawn", "list", "kill", "kill-all", "map"}

func runBg(ctx context.Context, env Env, args []string) int {
	fs := newFlags("bg", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	role := fs.String("role", "", "caller role (default $SQUIDRUN_ROLE, else user)")
	command := fs.String("command", "", "spawn: the agent command (default: the configured one)")
	task := fs.String("task", "", "spawn: the first work message")
	asJSON := jsonFlag(fs, "the hub's answer")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) == 0 {
		if err == nil {
			err = errors.New("missing action")
		}
		return usageError(env, fs, bgSynopsis, err)
	}
	action, rest := pos[0], pos[1:]
	payload := map[string]any{}
	switch action {
	case "spawn":
		if len(rest) > 1 {
			return usageError(env, fs, bgSynopsis, errors.New("spawn takes at most one slot"))
		}
		if len(rest) == 1 {
			payload["slot"] = rest[0]
		}
		if *command != "" {
			payload["command"] = *command
		}
		if *task != "" {
			payload["task"] = *task
		}
	case "kill":
		if len(rest) != 1 {
			return usageError(env, fs, bgSynopsis, errors.New("kill needs one target"))
		}
		payload["target"] = rest[0]
	case "kill-all", "list":
		if len(rest) > 0 {
			return usageError(env, fs, bgSynopsis, fmt.Errorf("%s takes no arguments", action))
		}
	case "map", "target-map":
		action = "target-map"
	default:
		return usageError(env, fs, bgSynopsis, fmt.Errorf("unknown action %q%s", action, didYouMean(action, bgActions)))
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cl := dialHub(cctx, env, "hm-bg", *root, *port, *role)
	if cl == nil {
		return ExitFailed
	}
	defer cl.Close()
	raw, _ := json.Marshal(payload)
	var resp struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := cl.Request(cctx, proto.Frame{Type: proto.TypeBackgroundAgent, Action: action, Payload: raw, RequestID: "bg-1"}, proto.TypeResponse, &resp); err != nil {
		fmt.Fprintln(env.Stderr, "hm-bg:", err)
		return ExitFailed
	}
	result, err := proto.DecodeBgResult(action, resp.OK, resp.Result)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm-bg:", err)
		return ExitFailed
	}
	if *asJSON {
		printJSON(env.Stdout, result)
	}
	return printBgResult(env, result, resp.Error, *asJSON)
}

// printBgResult prints a background-agent result for people (unless
// asJSON) and returns the exit code: 1 with the status on stderr when the
// hub refused.
func printBgResult(env Env, result proto.BgResult, respError string, asJSON bool) int {
	if r, refused := result.(proto.BgRefusal); refused {
		code, why := r.Status, r.Error
		if code == "" {
			code = status.Code(respError)
		}
		if why == "" && respError != string(code) {
			why = respError // the hub's words (a refusal before the slots)
		}
		if why == "" {
			fmt.Fprintf(env.Stderr, "hm-bg: %s\n", code)
		} else {
			fmt.Fprintf(env.Stderr, "hm-bg: %s: %s\n", code, why)
		}
		return ExitFailed
	}
	if asJSON {
		return ExitOK
	}
	switch r := result.(type) {
	case proto.BgSpawnResult:
		fmt.Fprintf(env.Stdout, "spawned %s (pane %s, owner pane %s): %s\n", r.Alias, r.PaneID, r.OwnerPaneID, r.Status)
	case proto.BgKillResult:
		fmt.Fprintf(env.Stdout, "killed %s\n", r.Alias)
	case proto.BgKillAllResult:
		fmt.Fprintf(env.Stdout, "killed %v\n", r.Killed)
	case proto.BgListResult:
		if len(r.Agents) == 0 {
			fmt.Fprintln(env.Stdout, "no background agents running")
			return ExitOK
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ALIAS\tPANE\tSTATUS\tPID\tCOMMAND")
		for _, a := range r.Agents {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", a.Alias, a.PaneID, a.Status, a.PID, a.Command)
		}
		tw.Flush()
	case proto.BgTargetMapResult:
		fmt.Fprintf(env.Stdout, "owner pane %s, max %d: %v %v\n", r.OwnerPaneID, r.MaxAgents, r.Aliases, r.PaneIDs)
	}
	return ExitOK
}

func runStatus(ctx context.Context, env Env, args []string) int {
	fs := newFlags("status", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	asJSON := jsonFlag(fs, "the result")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, "hm status [--json]", err)
	}
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm status:", err)
		return ExitFailed
	}
	tok, _ := cfg.layout.ReadToken()
	if t := env.Getenv("HM_TOKEN"); t != "" {
		tok = t
	}
	st, err := fetchStatus(ctx, cfg, tok)
	if err != nil {
		app, _ := cfg.layout.ReadAppStatus()
		if *asJSON {
			printJSON(env.Stdout, map[string]any{"hub": map[string]any{"running": false, "port": cfg.port, "session": app.Session, "root": cfg.layout.Root}, "error": err.Error()})
		} else {
			fmt.Fprintf(env.Stdout, "hub: not running (port %d; last session %d; root %s)\n", cfg.port, app.Session, cfg.layout.Root)
		}
		fmt.Fprintln(env.Stderr, "hm status:", err)
		return ExitFailed
	}
	if *asJSON {
		printJSON(env.Stdout, st)
		if st.Ledger.Error != "" {
			return ExitFailed
		}
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "hub: running pid %d (hm %s) on %s, session %d, up %s, root %s\n", st.Hub.PID, st.Hub.Version, st.Hub.URL, st.Hub.Session, (time.Duration(st.Hub.UptimeMs) * time.Millisecond).Round(time.Second), st.Hub.Root)
	printPanes(env.Stdout, st.Panes, time.Now())
	printFederation(env.Stdout, st.Federation)
	fmt.Fprintf(env.Stdout, "slots: %d running\n", len(st.Slots))
	for _, s := range st.Slots {
		fmt.Fprintf(env.Stdout, "  %s (pane %s) %s pid %d\n", s.Alias, s.PaneID, s.Status, s.PID)
	}
	fmt.Fprintf(env.Stdout, "listeners: %s; clients: %d\n", strings.Join(st.Listeners, ", "), st.Clients)
	tg := st.Telegram.State
	if st.Telegram.LastError != "" {
		tg += ": " + st.Telegram.LastError
	}
	fmt.Fprintf(env.Stdout, "telegram: %s\n", tg)
	printStuck(env.Stdout, st)
	printObligations(env.Stdout, st)
	if st.Ledger.Error != "" {
		fmt.Fprintf(env.Stdout, "ledger: ERROR %s\n", st.Ledger.Error)
		fmt.Fprintln(env.Stderr, "hm status: the ledger cannot commit:", st.Ledger.Error)
		return ExitFailed
	}
	fmt.Fprintf(env.Stdout, "ledger: ok (%s)\n", st.Ledger.Path)
	return ExitOK
}

// printFederation shows the hub's NATS identity and the panes other hubs
// host (hm up --nats); nothing when the hub is not federated.
func printFederation(w io.Writer, f *hub.FederationStatus) {
	if f == nil {
		return
	}
	conn := "connected"
	if !f.Connected {
		conn = "DISCONNECTED (messages for remote roles wait in the ledger)"
	}
	fmt.Fprintf(w, "federation: hub %s, team %s, NATS %s\n", f.Hub, f.Team, conn)
	if f.Conflict != "" {
		fmt.Fprintf(w, "  NAME CONFLICT: %s\n", f.Conflict)
	}
	if len(f.RemotePanes) == 0 && len(f.Unhosted) == 0 {
		fmt.Fprintln(w, "  (no remote panes seen)")
	}
	for _, p := range f.RemotePanes {
		fmt.Fprintf(w, "  %s on hub %s: %s (seen %s ago)\n", p.Role, p.Hub, dashIfEmpty(p.State), time.Since(time.UnixMilli(p.LastSeenMs)).Round(time.Second))
	}
	for _, r := range f.Unhosted {
		fmt.Fprintf(w, "  %s: NO HUB HOSTS IT (no live presence claims it; messages for it wait in NATS)\n", r)
	}
}

// printStuck lists the session's messages stuck at a pane, newest last.
func printStuck(w io.Writer, st hub.Status) {
	if len(st.Stuck) == 0 {
		return
	}
	fmt.Fprintf(w, "stuck: %d message(s) a pane could not get submitted%s (hm comms history shows them):\n", len(st.Stuck), newestShown(st.StuckMore, len(st.Stuck)))
	for _, m := range st.Stuck {
		ref := m.MessageID
		if m.Header != "" && m.Seq > 0 {
			ref = fmt.Sprintf("%s #%d (%s)", m.Header, m.Seq, m.MessageID)
		}
		fmt.Fprintf(w, "  %s %s → %s, %s ago: %s\n", ref, m.From, m.To, time.Since(time.UnixMilli(m.AtMs)).Round(time.Second), m.Reason)
	}
}

// printObligations lists the open obligations, oldest first: who owes
// whom an answer to which message, since when; those of the previous
// session are marked (no reply closes them any more: their numbers
// restarted).
func printObligations(w io.Writer, st hub.Status) {
	if len(st.Obligations) == 0 {
		fmt.Fprintln(w, "obligations: none open")
		return
	}
	fmt.Fprintf(w, "obligations: %d open%s ([ACK REQUIRED] messages not answered with a reference to them):\n", len(st.Obligations), newestShown(st.ObligationsMore, len(st.Obligations)))
	for _, o := range st.Obligations {
		from := ""
		if o.SessionID != "" && o.SessionID != st.Hub.SessionID {
			from = " (from " + o.SessionID + ")"
		}
		delivery := ""
		if o.Delivery != "" {
			delivery = "; " + o.Ref + " is " + o.Delivery
			if o.ToVerify != "" {
				delivery += ", " + o.ToVerify
			}
		}
		fmt.Fprintf(w, "  %s owes %s an answer to %s, open %s%s%s\n", o.Owner, o.Requester, o.Ref, time.Since(time.UnixMilli(o.OpenedAtMs)).Round(time.Second), from, delivery)
	}
}

// newestShown says that a list of n was cut to its newest, when more.
func newestShown(more bool, n int) string {
	if !more {
		return ""
	}
	return fmt.Sprintf(", the newest %d shown", n)
}

// dashIfEmpty is s, or "-" when s is empty.
func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printPanes is hm status's pane table, as of now: each pane's state, how
// its program came to be (PROGRAM: started, adopted, restarted or
// resumed, with the restarts; agent.Status.OriginWords), then the drift
// warnings.
func printPanes(w io.Writer, panes []hub.PaneStatus, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPANE\tPID\tSTATE\tPROGRAM\tSCREEN\tQUEUED\tLAST ACTIVITY\tCOMMAND")
	for _, p := range panes {
		last := "-"
		if p.LastActivityMs > 0 {
			last = now.Sub(time.UnixMilli(p.LastActivityMs)).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Role, p.PaneID, p.PID, paneState(p), dashIfEmpty(p.OriginWords), dashIfEmpty(p.Readiness), p.Queued, last, p.Command)
	}
	tw.Flush()
	if len(panes) == 0 {
		fmt.Fprintln(w, "(no hosted panes)")
	}
	for _, p := range panes {
		if p.Drift != nil {
			fmt.Fprintf(w, "warning: %s: %s\n", p.Role, p.Drift.Warning)
		}
	}
}

// paneState is a pane's STATE column in `hm status`: the state, why it
// exited, and what its messages wait for when that is a person.
func paneState(p hub.PaneStatus) string {
	state := p.State
	if p.LastError != "" && p.State == "exited" {
		state += " (" + p.LastError + ")"
	}
	if p.Waiting != "" {
		state += ", " + p.Waiting
	}
	return state
}

func fetchStatus(ctx context.Context, cfg clientConfig, token string) (hub.Status, error) {
	var st hub.Status
	err := hubJSON(ctx, http.MethodGet, cfg, "/status", token, 3*time.Second, &st)
	return st, err
}

// hubJSON sends method path to the hub cfg finds with token, within
// timeout, and decodes its JSON answer into out. An answer other than 200
// is an error carrying the hub's message ({"error": …} or the body's
// text); no hub at all is a noHubError.
func hubJSON(ctx context.Context, method string, cfg clientConfig, path, token string, timeout time.Duration, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:"+strconv.Itoa(cfg.port)+path, nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return hubError(cfg.port, cfg.layout.Root, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read the hub's answer to %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &hubRefusal{status: resp.Status, code: resp.StatusCode, msg: clipText(msg, 300)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode the hub's answer to %s: %w", path, err)
	}
	return nil
}

// hubRefusal is hubJSON's error for an answer other than 200: the HTTP
// status and the hub's message.
type hubRefusal struct {
	status string
	code   int
	msg    string
}

func (e *hubRefusal) Error() string { return "hub answered " + e.status + ": " + e.msg }

// clipText cuts s to at most n bytes for an error message.
func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func runAttach(ctx context.Context, env Env, args []string) int {
	fs := newFlags("attach", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	view := fs.Bool("view", false, "read-only: watch without typing")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) != 1 {
		if err == nil {
			err = errors.New("name one pane")
		}
		return usageError(env, fs, "hm attach <pane> [--view]", err)
	}
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm attach:", err)
		return ExitFailed
	}
	tok := cfg.token
	url := fmt.Sprintf("ws://127.0.0.1:%d/attach/%s", cfg.port, pos[0])
	in, out := io.Reader(env.Stdin), env.Stdout
	resize := make(chan [2]uint16, 1)
	if f, ok := env.Stdin.(*os.File); ok && agent.IsTerminal(int(f.Fd())) {
		restore, err := agent.RawMode(int(f.Fd()))
		if err != nil {
			fmt.Fprintln(env.Stderr, "hm attach:", err)
			return ExitFailed
		}
		defer restore()
		if c, r, err := agent.TerminalSize(int(f.Fd())); err == nil {
			resize <- [2]uint16{c, r}
		}
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if c, r, err := agent.TerminalSize(int(f.Fd())); err == nil {
					select {
					case resize <- [2]uint16{c, r}:
					default:
					}
				}
			}
		}()
		mode := ""
		if *view {
			mode = ", read-only: what you type is not sent"
		}
		banner := fmt.Sprintf("hm: attached to %s (Ctrl-\\ detaches%s)", pos[0], mode)
		// The pane's screen, drawn next, covers the banner's line: the
		// banner also goes to the window title (pushed, popped on detach).
		fmt.Fprintf(env.Stderr, "%s\r\n\x1b[22;0t\x1b]2;%s\x07", banner, banner)
		defer fmt.Fprint(env.Stderr, "\x1b[23;0t")
	}
	err = agent.AttachClient(ctx, url, tok, *view, in, out, resize)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(env.Stderr, "\r\nhm attach: %v\n", hubError(cfg.port, cfg.layout.Root, err))
		return ExitFailed
	}
	// Still in raw mode: \r\n, so the shell's prompt starts at column 0.
	fmt.Fprint(env.Stderr, "\r\nhm: detached\r\n")
	return ExitOK
}

func runReceipt(ctx context.Context, env Env, args []string) int {
	fs := newFlags("receipt", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, "hm receipt < hook-payload", err)
	}
	data, err := io.ReadAll(io.LimitReader(env.Stdin, 4<<20))
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm receipt: read stdin:", err)
		return ExitFailed
	}
	ids := hook.PromptReceipts(data)
	if len(ids) == 0 {
		return ExitOK // a prompt typed by a human: nothing to prove
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl := dialHub(cctx, env, "hm receipt", *root, *port, "")
	if cl == nil {
		return ExitFailed
	}
	defer cl.Close()
	if err := sendReceipt(cctx, cl, "hm receipt", ids); err != nil {
		fmt.Fprintln(env.Stderr, "hm receipt:", err)
		return ExitFailed
	}
	raw, err := cl.Await(cctx, proto.TypeResponse, receiptRequest, "")
	var resp struct {
		Result proto.ReceiptResult `json:"result"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &resp)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm receipt:", err)
		return ExitFailed
	}
	for _, id := range resp.Result.Verified {
		fmt.Fprintf(env.Stdout, "%s %s\n", id, status.DeliveredVerified)
	}
	for _, id := range resp.Result.Ignored {
		fmt.Fprintf(env.Stderr, "hm receipt: %s: proves nothing (unknown, not this role's, or put in the agent's context by hm)\n", id)
	}
	if len(resp.Result.Ignored) > 0 {
		return ExitFailed
	}
	return ExitOK
}

func runDoctor(ctx context.Context, env Env, args []string) int {
	fs := newFlags("doctor", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, "hm doctor [--root D]", err)
	}
	fails := 0
	report := func(ok bool, warnOnly bool, what, detail string) {
		mark := "ok  "
		if !ok && warnOnly {
			mark = "warn"
		} else if !ok {
			mark = "FAIL"
			fails++
		}
		fmt.Fprintf(env.Stdout, "%s  %-12s %s\n", mark, what, detail)
	}
	cfg, err := discover(env, *root, *port, "")
	if err != nil {
		report(false, false, "root", err.Error())
		return ExitFailed
	}
	lay := cfg.layout
	report(true, false, "root", lay.Root)
	checkMode := func(path string, want os.FileMode, what string) {
		st, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			report(false, true, what, path+" does not exist yet (hm up creates it)")
			return
		}
		if err != nil {
			report(false, false, what, err.Error())
			return
		}
		if st.Mode().Perm()&^want != 0 {
			report(false, false, what, fmt.Sprintf("%s has mode %o; want %o (chmod %o %s)", path, st.Mode().Perm(), want, want, path))
			return
		}
		report(true, false, what, fmt.Sprintf("%s (%o)", path, st.Mode().Perm()))
	}
	checkMode(lay.State(), 0o700, "state dir")
	checkMode(lay.Triggers(), 0o700, "triggers")
	checkMode(lay.Token(), 0o600, "token")
	checkMode(lay.Ledger(), 0o600, "ledger file")
	team, err := roles.Load(lay.Settings())
	if err != nil {
		report(false, false, "settings", err.Error())
		team = roles.Default()
	} else {
		report(true, false, "settings", fmt.Sprintf("%d panes, %d background slots", len(team.Members()), team.Background.Max))
	}
	for _, m := range team.Members() {
		if m.Transport != roles.TransportPTY {
			continue
		}
		if why := roles.CommandProblem(m.Command, env.Getenv("PATH")); why != "" {
			report(false, true, "command", fmt.Sprintf("%s: %s (the pane will show why and retry)", m.Role, why))
		} else {
			report(true, false, "command", fmt.Sprintf("%s: %s", m.Role, m.Command))
		}
	}
	if _, err := os.Stat(lay.Ledger()); err == nil {
		l, err := openLedger(ctx, lay)
		if err != nil {
			report(false, false, "ledger", err.Error())
		} else {
			rep, err := l.Verify(ctx)
			l.Close()
			switch {
			case err != nil:
				report(false, false, "ledger", err.Error())
			case !rep.OK:
				report(false, false, "ledger", "hash chain broken: "+rep.FirstBad)
			default:
				report(true, false, "ledger", fmt.Sprintf("%d messages, %d events, chain verified", rep.Messages, rep.Events))
			}
		}
	}
	tok, _ := lay.ReadToken()
	if st, err := fetchStatus(ctx, cfg, tok); err == nil {
		report(true, false, "hub", fmt.Sprintf("running pid %d on port %d, session %d", st.Hub.PID, st.Hub.Port, st.Hub.Session))
		for _, p := range st.Panes {
			if p.Drift != nil {
				report(false, true, "profile", p.Role+": "+p.Drift.Warning)
			}
		}
	} else if ln, lerr := listenCheck(cfg.port); lerr == nil {
		ln()
		report(true, true, "port", fmt.Sprintf("127.0.0.1:%d is free (hub not running)", cfg.port))
	} else {
		report(false, false, "port", fmt.Sprintf("127.0.0.1:%d is taken by something that is not this hub: %v", cfg.port, lerr))
	}
	if fails > 0 {
		return ExitFailed
	}
	return ExitOK
}
