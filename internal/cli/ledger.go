package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"hm/broker/proto"
	"hm/internal/cmdline"
	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/journal/report"
	"hm/roles"
)

// rootLedger finds the root --root names and opens its ledger read-only;
// on failure it prints "<cmd>: <error>" and reports false.
func rootLedger(ctx context.Context, env Env, root, cmd string) (layout.Layout, *journal.Ledger, bool) {
	lay, err := findRoot(env, root)
	if err == nil {
		var l *journal.Ledger
		if l, err = openLedger(ctx, lay); err == nil {
			return lay, l, true
		}
	}
	fmt.Fprintln(env.Stderr, cmd+":", err)
	return lay, nil, false
}

// openLedger opens the ledger read-only beside a possibly running hub,
// with the ledger key and the hub's signed head (for verify).
func openLedger(ctx context.Context, lay layout.Layout) (*journal.Ledger, error) {
	return journal.Open(ctx, lay.Ledger(), journal.Options{ReadOnly: true, KeyPath: lay.LedgerKey(), HeadPath: lay.LedgerCheckpoint()})
}

// The synopses of hm comms's subcommands.
const (
	historySynopsis = "hm comms history [--last N] [--session N|all] [--json]"
	searchSynopsis  = "hm comms search <query> [--limit N] [--json]"
	tailSynopsis    = "hm comms tail [-f] [--last N]"
)

func commsCommands() []command {
	return []command{
		{name: "history", summary: "the ledger's rows of this session (or another, or all), newest last", run: runHistory},
		{name: "search", summary: "full-text search of every message", run: runSearch},
		{name: "tail", summary: "the newest rows; -f prints each change live", run: runTail},
	}
}

func runComms(ctx context.Context, env Env, args []string) int {
	return runSub(ctx, env, "hm comms", commsCommands(), args)
}

func printRows(w io.Writer, rows []journal.Message) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSESSION\tFROM\tTO\tSEQ\tDELIVERY\tMESSAGE")
	var notes []string
	for _, m := range rows {
		ts := time.UnixMilli(m.BrokeredAtMs).UTC().Format("01-02 15:04:05")
		body := oneLine(m.RawBody)
		if r := []rune(body); len(r) > 80 {
			body = string(r[:79]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", ts, strings.TrimPrefix(m.SessionID, roles.SessionPrefix), m.SenderRole, m.TargetRole, m.Seq, withCode(m), body)
		if v := m.ToVerify(); v != "" && !slices.Contains(notes, v) {
			notes = append(notes, v)
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, "note: a message is "+n)
	}
}

// withCode is a row's delivery in plain words (journal.Message.Delivery)
// with a failure's error code: "failed (pane_failed)".
func withCode(m journal.Message) string {
	if m.Status == status.Failed && m.ErrorCode != "" {
		return m.Delivery() + " (" + string(m.ErrorCode) + ")"
	}
	return m.Delivery()
}

// oneLine is a message body as the text views of hm comms show it: as
// every view shows it (roles.ViewContent: a later line that reads as
// another message's header is quoted), whitespace collapsed to one line.
// --json prints bodies as stored.
func oneLine(body string) string { return strings.Join(strings.Fields(roles.ViewContent(body)), " ") }

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func runHistory(ctx context.Context, env Env, args []string) int {
	fs := newFlags("comms history", env)
	root := rootFlag(fs)
	last := fs.Int("last", 20, "how many rows (newest last)")
	session := fs.String("session", "", "session number or 'all' (default: the current session)")
	asJSON := jsonFlag(fs, "the result")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 || *last <= 0 {
		if err == nil {
			err = errors.New("unexpected arguments or --last <= 0")
		}
		return usageError(env, fs, historySynopsis, err)
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm comms:", err)
		return ExitFailed
	}
	q := journal.HistoryQuery{Last: *last}
	switch *session {
	case "all":
	case "":
		st, err := lay.ReadAppStatus()
		if err == nil && st.Session > 0 {
			q.SessionID = roles.SessionID(st.Session)
		}
	default:
		n, err := strconv.Atoi(*session)
		if err != nil || n <= 0 {
			return usageError(env, fs, historySynopsis, fmt.Errorf("--session %q: a number or all", *session))
		}
		q.SessionID = roles.SessionID(n)
	}
	l, err := openLedger(ctx, lay)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm comms:", err)
		return ExitFailed
	}
	defer l.Close()
	rows, err := l.History(ctx, q)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm comms:", err)
		return ExitFailed
	}
	if *asJSON {
		if rows == nil {
			rows = []journal.Message{}
		}
		printJSON(env.Stdout, rows)
		return ExitOK
	}
	printRows(env.Stdout, rows)
	return ExitOK
}

func runSearch(ctx context.Context, env Env, args []string) int {
	fs := newFlags("comms search", env)
	root := rootFlag(fs)
	limit := fs.Int("limit", 20, "most results")
	asJSON := jsonFlag(fs, "the result")
	pos, err := cmdline.ParseMessageArgs(fs, args, 0)
	if err != nil || len(pos) == 0 || *limit <= 0 {
		if err == nil {
			err = errors.New("missing query")
		}
		return usageError(env, fs, searchSynopsis, err)
	}
	_, l, ok := rootLedger(ctx, env, *root, "hm comms")
	if !ok {
		return ExitFailed
	}
	defer l.Close()
	hits, err := l.Search(ctx, strings.Join(pos, " "), *limit)
	if errors.Is(err, journal.ErrBadQuery) {
		fmt.Fprintln(env.Stderr, "hm comms search: malformed query:", err)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm comms search:", err)
		return ExitFailed
	}
	if *asJSON {
		if hits == nil {
			hits = []journal.Hit{}
		}
		printJSON(env.Stdout, hits)
		return ExitOK
	}
	if len(hits) == 0 {
		fmt.Fprintln(env.Stdout, "no matches")
		return ExitOK
	}
	for _, h := range hits {
		ts := time.UnixMilli(h.BrokeredAtMs).UTC().Format("2006-01-02 15:04:05")
		fmt.Fprintf(env.Stdout, "%s  %s → %s  %s  %s\n    %s\n", ts, h.SenderRole, h.TargetRole, h.MessageID, withCode(h.Message), oneLine(h.Excerpt))
	}
	return ExitOK
}

func runTail(ctx context.Context, env Env, args []string) int {
	fs := newFlags("comms tail", env)
	root := rootFlag(fs)
	follow := fs.Bool("f", false, "follow: print ledger changes live")
	last := fs.Int("last", 10, "rows to print first")
	port := portFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, tailSynopsis, err)
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm comms:", err)
		return ExitFailed
	}
	if l, err := openLedger(ctx, lay); err == nil {
		rows, err := l.History(ctx, journal.HistoryQuery{Last: *last})
		l.Close()
		if err == nil {
			printRows(env.Stdout, rows)
		}
	}
	if !*follow {
		return ExitOK
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	cl := dialHub(dctx, env, "hm comms tail", *root, *port, "")
	cancel()
	if cl == nil {
		return ExitFailed
	}
	defer cl.Close()
	if err := cl.WriteJSON(ctx, proto.Frame{Type: proto.TypeSubscribe, Topics: []string{"journal"}}); err != nil {
		fmt.Fprintln(env.Stderr, "hm comms tail:", err)
		return ExitFailed
	}
	for {
		typ, raw, err := cl.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ExitOK
			}
			fmt.Fprintln(env.Stderr, "hm comms tail: connection ended:", err)
			return ExitFailed
		}
		if typ != proto.TypeJournalEvent {
			continue
		}
		var ev proto.JournalEvent
		if json.Unmarshal(raw, &ev) != nil {
			continue
		}
		r := ev.Row
		body := oneLine(r.RawBody)
		if rs := []rune(body); len(rs) > 100 {
			body = string(rs[:99]) + "…"
		}
		fmt.Fprintf(env.Stdout, "%s  %-10s %s → %s  %s  %s  %s\n", time.UnixMilli(r.AtMs).UTC().Format("15:04:05.000"), r.Event, r.SenderRole, r.TargetRole, r.Status, r.MessageID, body)
	}
}

func reportOptions(lay layout.Layout) report.Options {
	st, _ := lay.ReadAppStatus()
	team, err := roles.Load(lay.Settings())
	if err != nil {
		team = roles.Default()
	}
	return report.Options{Session: st.Session, SessionID: roles.SessionID(st.Session), Now: time.Now(), Roles: report.RolesFromTeam(team)}
}

func runBriefing(ctx context.Context, env Env, args []string) int {
	fs := newFlags("briefing", env)
	root := rootFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, "hm briefing [--root D]", err)
	}
	lay, l, ok := rootLedger(ctx, env, *root, "hm briefing")
	if !ok {
		return ExitFailed
	}
	defer l.Close()
	data, err := report.Briefing(ctx, l, reportOptions(lay))
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm briefing:", err)
		return ExitFailed
	}
	_, _ = env.Stdout.Write(data)
	return ExitOK
}

func runHandoff(ctx context.Context, env Env, args []string) int {
	fs := newFlags("handoff", env)
	root := rootFlag(fs)
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return usageError(env, fs, "hm handoff [--root D]", err)
	}
	lay, l, ok := rootLedger(ctx, env, *root, "hm handoff")
	if !ok {
		return ExitFailed
	}
	defer l.Close()
	o := reportOptions(lay)
	o.Now = time.Time{}
	data, err := report.Handoff(ctx, l, o)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm handoff:", err)
		return ExitFailed
	}
	if err := lay.Ensure(); err != nil {
		fmt.Fprintln(env.Stderr, "hm handoff:", err)
		return ExitFailed
	}
	if _, err := report.WriteHandoff(lay.Handoffs(), data); err != nil {
		fmt.Fprintln(env.Stderr, "hm handoff:", err)
		return ExitFailed
	}
	_, _ = env.Stdout.Write(data)
	return ExitOK
}

func journalCommands() []command {
	return []command{
		{name: "verify", summary: "recompute the keyed hash chain; exit 1 names the first bad row", run: runJournalVerify},
		{name: "checkpoint", summary: "print a signed checkpoint of the chain's head, to keep elsewhere", run: runJournalCheckpoint},
	}
}

func runJournal(ctx context.Context, env Env, args []string) int {
	return runSub(ctx, env, "hm journal", journalCommands(), args)
}
