package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hm/agent"

	"hm/internal/ground/layout"
	"hm/internal/hub"
	"hm/internal/notify"
)

// maxPort is the highest TCP port.
const maxPort = 65535

const upSynopsis = "hm up [--root D] [--port N] [--no-panes] [--demo] [--allow-anonymous] [--rate-limit N] [--durable] [--pprof] [--nats URL [--nats-creds FILE] [--team NAME] [--hub NAME]]"

func runUp(ctx context.Context, env Env, args []string) int {
	return upCommand(ctx, env, args, "up", upSynopsis, nil)
}

// upCommand runs the hub in the foreground (hm up, hm restart); before,
// when set, runs once the root is known, before anything else.
func upCommand(ctx context.Context, env Env, args []string, name, synopsis string, before func(context.Context, Env, layout.Layout) error) int {
	fs := newFlags(name, env)
	root := rootFlag(fs)
	port := fs.Int("port", -1, "port on 127.0.0.1 (0 picks a free one; default: settings.json port or 9900)")
	noPanes := fs.Bool("no-panes", false, "do not host agent panes")
	demo := fs.Bool("demo", false, "host the tour's team: architect, builder and oracle panes that show each message's text (make run)")
	anon := fs.Bool("allow-anonymous", false, "trust the declared role of clients that send no token")
	rate := fs.Float64("rate-limit", 200, "frames per second per connection (0 turns the limit off)")
	durable := fs.Bool("durable", false, "synchronous=FULL for the ledger")
	pprof := fs.Bool("pprof", false, "serve Go profiles at /debug/pprof/ on the hub's port, to the operator token only (also settings.json \"pprof\": true)")
	natsURL := fs.String("nats", "", "join the team's other hubs through NATS JetStream at URL (also settings.json \"nats\": {\"url\"}); without it nothing of NATS runs")
	natsCreds := fs.String("nats-creds", "", "NATS user credentials file: the hub's identity, which signs its presence")
	natsTeam := fs.String("team", "", "the team's name on NATS: stream HM_<TEAM>, subjects hm.<team>.> (default \"hm\")")
	natsHub := fs.String("hub", "", "this hub's name on NATS without --nats-creds (default: the host name)")
	verbose := fs.Bool("verbose", false, "stream the full log (debug level) to this terminal instead of the one-line status")
	fs.BoolVar(verbose, "v", false, "short for --verbose")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected argument %q", pos[0])
		}
		return usageError(env, fs, synopsis, err)
	}
	portSet := false
	fs.Visit(func(f *flag.Flag) { portSet = portSet || f.Name == "port" })
	if portSet && (*port < 0 || *port > maxPort) {
		return usageError(env, fs, synopsis, fmt.Errorf("--port %d: want 0 (any free port) to %d", *port, maxPort))
	}
	if *rate < 0 {
		return usageError(env, fs, synopsis, fmt.Errorf("--rate-limit must be >= 0"))
	}
	lay, err := findRoot(env, *root)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm up:", err)
		return ExitFailed
	}
	if before != nil {
		if err := before(ctx, env, lay); err != nil {
			fmt.Fprintf(env.Stderr, "hm %s: %v\n", name, err)
			return ExitFailed
		}
	}
	if err := lay.Ensure(); err != nil {
		fmt.Fprintln(env.Stderr, "hm up:", err)
		return ExitFailed
	}
	logFile, err := os.OpenFile(lay.HubLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm up: open hub log:", err)
		return ExitFailed
	}
	defer logFile.Close()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	// The terminal gets a one-line status and each warning in a line; the
	// full log goes to hub.log, and with -v to the terminal as well.
	term := &terminalLog{w: env.Stderr}
	var shown slog.Handler = term
	if *verbose {
		shown = slog.NewMultiHandler(term.counting(), slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	}
	logger := slog.New(slog.NewMultiHandler(shown, slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: level})))
	stopped := ctx // done on Ctrl-C or SIGTERM (Main)
	ctx, cancel := context.WithCancel(ctx)
	// SIGUSR1 stops the hub leaving its panes' programs to the root's
	// pane host (#37).
	leave := make(chan os.Signal, 1)
	signal.Notify(leave, syscall.SIGUSR1)
	defer signal.Stop(leave)
	var watch sync.WaitGroup
	defer watch.Wait()
	defer cancel()
	err = hub.Run(ctx, hub.Options{
		Layout: lay, Port: *port, NoPanes: *noPanes, Demo: *demo, AllowAnonymous: *anon,
		RateLimit: *rate, Durable: *durable, Pprof: *pprof, Logger: logger, Getenv: env.Getenv,
		Terminal: terminalSink(env.Stderr), DetectDesktop: true,
		NATS:       hub.NATSOptions{URL: *natsURL, Creds: *natsCreds, Team: *natsTeam, Hub: *natsHub},
		PaneKeeper: paneKeeper(),
		Ready: func(h *hub.Hub) {
			fmt.Fprintf(env.Stderr, "hm: hub listening on %s (session %d, root %s); Ctrl-C stops it and its panes, %s\n", h.URL(), h.Session, h.Layout.Root, keepPanesHint())
			watch.Go(func() {
				select {
				case <-leave:
					h.LeavePanes()
					fmt.Fprintln(env.Stderr, "hm: stopping; the root's pane host keeps the panes' programs running for the next hm up on this root to adopt")
					cancel()
				case <-ctx.Done():
					if stopped.Err() != nil {
						fmt.Fprintf(env.Stderr, "hm: stopping the hub and ending its panes' programs; to keep them running instead, %s\n", keepPanesHint())
					}
				}
			})
			if !*verbose {
				fmt.Fprintf(env.Stderr, "hm: the full log is in %s (hm up -v streams it here)\n", lay.HubLog())
				watch.Go(func() { h.WatchTerminal(ctx, env.Stderr, 2*time.Second, term.count) })
			}
		},
	})
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm up:", err)
		return ExitFailed
	}
	return ExitOK
}

// keepPanesHint says how to stop this hub leaving its panes' programs
// running for the next hub (#37): hm restart, or SIGUSR1 and hm up.
func keepPanesHint() string {
	return fmt.Sprintf("`hm restart` replaces it keeping the panes (or `kill -USR1 %d` stops it leaving them for the next hm up)", os.Getpid())
}

// terminalLog is the hub's terminal as a slog.Handler: each warning or
// error as one short line ("hm: warning: <message>: <err>"), counted for
// the status line; the rest of the log is in hub.log.
type terminalLog struct {
	w      io.Writer
	n      atomic.Int64
	silent bool         // count only (hm up -v streams the whole log instead)
	parent *terminalLog // the counter a counting copy adds to
}

func (t *terminalLog) counting() *terminalLog { return &terminalLog{w: t.w, silent: true, parent: t} }

func (t *terminalLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (t *terminalLog) Handle(_ context.Context, r slog.Record) error {
	c := t
	if t.parent != nil {
		c = t.parent
	}
	c.n.Add(1)
	if t.silent {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "error" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	level := "warning"
	if r.Level >= slog.LevelError {
		level = "error"
	}
	_, err := fmt.Fprintf(t.w, "hm: %s: %s\n", level, msg)
	return err
}

func (t *terminalLog) WithAttrs([]slog.Attr) slog.Handler { return t }
func (t *terminalLog) WithGroup(string) slog.Handler      { return t }

// count is the number of warnings and errors logged so far.
func (t *terminalLog) count() int { return int(t.n.Load()) }

// terminalSink is the notification sink of the hub's terminal: w when it
// is a terminal, else none (a log file or a pipe gets no bells).
func terminalSink(w io.Writer) notify.Sink {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if t, ok := notify.TerminalOf(f); ok {
		return t
	}
	return nil
}

// paneKeeper runs `hm pane-keeper` (this executable) as the root's pane
// host, which holds every pane program's terminal (agent.Keeper); nil when
// the executable cannot be found.
func paneKeeper() *agent.Keeper {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &agent.Keeper{Argv: []string{exe, agent.KeeperCommand}}
}
