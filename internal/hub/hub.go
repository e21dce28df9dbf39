// Package hub assembles a running hm hub: the coordination root, the
// ledger, the broker and its WebSocket server, hosted panes, the trigger
// watcher, the Telegram relay and the handoff writer, and stops them in
// order.
package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hm/agent"

	"hm/broker"
	"hm/broker/telegram"
	"hm/internal/ground/buildinfo"
	"hm/internal/ground/layout"
	"hm/internal/notify"
	"hm/internal/slots"
	"hm/journal"
	"hm/journal/report"
	"hm/roles"
	"hm/triggers"
)

// Version is the hm version written to app-status.json and /status: the
// build's own (buildinfo), as `hm --version` prints it.
var Version = buildinfo.Version()

// Options are `hm up`'s flags.
type Options struct {
	Layout         layout.Layout
	Port           int // -1: from settings (default 9900); 0: any free port
	NoPanes        bool
	Demo           bool // host the tour's team (roles.Demo), not settings.json's
	AllowAnonymous bool
	RateLimit      float64 // frames/s per connection; 0 = off
	Durable        bool
	// Pprof serves net/http/pprof at /debug/pprof/ on the loopback
	// listener, to the operator token only (also settings.json "pprof").
	Pprof bool
	// NATS joins the hub to its team's other hubs through NATS JetStream
	// (hm up --nats URL --nats-creds FILE --team NAME; settings.json
	// "nats"). Empty URL in both: nothing of NATS runs.
	NATS NATSOptions
	// PaneKeeper puts each pane program in a pane host (agent.Keeper: hm
	// up's `hm pane-keeper`, one for the team's panes), so that a hub killed with -9 does not
	// hang the programs' terminals up before they took what was typed.
	// nil: none (tests that run the hub in their own process).
	PaneKeeper *agent.Keeper
	Logger     *slog.Logger
	// Ready, if set, is called once the hub is listening.
	Ready func(h *Hub)
	// Getenv overrides os.Getenv (tests).
	Getenv func(string) string
	// Tuning for tests; zero values take production defaults.
	TriggerRescan   time.Duration
	HandoffEvery    time.Duration
	ReminderEvery   time.Duration
	LedgerMaxBytes  int64
	PaneMinBackoff  time.Duration
	PaneMaxBackoff  time.Duration
	TelegramPoll    time.Duration
	BackgroundIdle  time.Duration
	StopGracePeriod time.Duration
	// WaitingNotice overrides the team's WaitingNotice (settings.json
	// "waitingForHumanMinutes") when positive.
	WaitingNotice time.Duration
	// Connection budgets (docs/protocol.md, "Connection budgets"); zero
	// takes the default. MaxAttach caps /attach/ and /ui/attach/ together
	// (default 64); the others are broker.Config's.
	MaxAttach, MaxConns, MaxUnregistered, MaxOperatorConns int
	// IdleTimeout closes an HTTP connection idle between requests (0: the
	// default, defaultIdleTimeout). Hijacked WebSocket connections have
	// their own rules.
	IdleTimeout time.Duration
	// WaitingSettle is how long a pane must not wait for a person for its
	// waiting spell to end (notify.Waiting.Settle; 0: the default).
	WaitingSettle time.Duration
	// Terminal, when set, is the hub's terminal (hm up's stderr when it
	// is one): notifications ring its bell and show as OSC 9 there.
	Terminal notify.Sink
	// DetectDesktop looks for the system's desktop notifier (notify-send,
	// osascript) when settings.json names no command: hm up sets it;
	// tests that run hubs do not.
	DetectDesktop bool
}

// defaultIdleTimeout bounds a keep-alive HTTP connection waiting for its
// next request: without it, a local peer that made one request (answered
// 401 or not) could hold a descriptor of the hub's forever, and enough of
// them starve the agents' connections.
const defaultIdleTimeout = 2 * time.Minute

// Hub is a running hub.
type Hub struct {
	opts    Options
	log     *slog.Logger
	lock    *layout.HubLock // runtime/hub.lock, held until the hub has stopped
	Layout  layout.Layout
	Session int
	Ledger  *journal.Ledger
	Broker  *broker.Broker
	Tokens  *broker.Tokens
	Port    int
	Started time.Time

	// team is the team the hub hosts: settings.json's as last loaded
	// (hm up, hm reload), read with Team.
	team atomic.Pointer[roles.Team]
	// reloadMu runs one hm reload at a time (Reload).
	reloadMu sync.Mutex

	components []component // started components, in start order
	panes      *paneSet
	slots      *slots.Set
	relay      *telegram.Relay
	watcher    *triggers.Watcher
	fed        *fedHub // nil unless federated (hm up --nats)
	notifier   *notify.Notifier

	launch launchFiles // the Claude launch files (launchwire), written once
	act    *activity   // what wakes the watchers (activity.go)
	keep   paneKeep    // the panes' keeper, made once (keeper.go)
}

// component is an optional part of the hub with its own lifecycle.
type component interface {
	// stop is called in reverse start order at shutdown.
	stop(ctx context.Context)
}

// Run starts the hub and serves until ctx is cancelled, then shuts down
// cleanly. It returns nil after a clean shutdown.
func Run(ctx context.Context, opts Options) error {
	h, ln, err := start(ctx, opts)
	if err != nil {
		return err
	}
	return h.serve(ctx, ln)
}

func start(ctx context.Context, opts Options) (*Hub, net.Listener, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	act := &activity{}
	opts.Logger = slog.New(ringOnWarn{Handler: opts.Logger.Handler(), bell: &act.changed})
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	lay := opts.Layout
	if err := lay.Ensure(); err != nil {
		return nil, nil, err
	}
	team, err := loadTeam(lay, opts.Demo)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range team.Warnings {
		opts.Logger.Warn(w, "file", lay.Settings())
	}
	port := opts.Port
	if port < 0 {
		port = team.Port
	}
	// One hub per root: the lock, then the port, both before the session
	// counter or the ledger is touched.
	lock, err := lay.LockHub()
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		lock.Release()
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("port %d on 127.0.0.1 is already in use (by a hub for another root, or another program); choose another with --port", port)
		}
		return nil, nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	fail := func(err error) (*Hub, net.Listener, error) {
		ln.Close()
		lock.Release()
		return nil, nil, err
	}
	if err := lock.Record(os.Getpid(), ln.Addr().(*net.TCPAddr).Port); err != nil {
		return fail(err)
	}
	tok, err := lay.EnsureToken()
	if err != nil {
		return fail(err)
	}
	// The ledger opens before the session counter moves: a hub that cannot
	// open it does not start and leaves no gap in the sessions.
	ledger, err := journal.Open(ctx, lay.Ledger(), journal.Options{Durable: opts.Durable, Logger: opts.Logger.With("component", "journal"), MaxBytes: opts.LedgerMaxBytes, KeyPath: lay.LedgerKey(), HeadPath: lay.LedgerCheckpoint()})
	if err != nil {
		return fail(err) // journal.Open's errors say "open ledger"
	}
	last, err := report.LastSession(ctx, ledger)
	if err != nil {
		ledger.Close()
		return fail(err)
	}
	st, err := lay.NextSession(Version, time.Now(), last)
	if err != nil {
		ledger.Close()
		return fail(err)
	}
	h := &Hub{
		opts: opts, log: opts.Logger, act: act, lock: lock, Layout: lay, Session: st.Session,
		Ledger: ledger, Tokens: broker.NewTokens(tok), Port: ln.Addr().(*net.TCPAddr).Port, Started: time.Now(),
	}
	h.team.Store(team)
	deps := broker.Deps{Ledger: ledger}
	if err := h.startComponents(ctx, &deps); err != nil {
		h.stopComponents(context.Background())
		ledger.Close()
		return fail(err)
	}
	burst := int(2 * opts.RateLimit)
	h.Broker = broker.New(broker.Config{
		Team: team, Session: st.Session, SessionID: h.SessionID(), SessionStarted: h.Started, Tokens: h.Tokens,
		AllowAnonymous: opts.AllowAnonymous, RateLimit: opts.RateLimit, RateBurst: burst,
		MaxConns: opts.MaxConns, MaxUnregistered: opts.MaxUnregistered, MaxOperatorConns: opts.MaxOperatorConns,
		Logger: opts.Logger.With("component", "broker"),
	}, deps)
	st.Hub = &layout.HubRef{PID: os.Getpid(), Port: h.Port}
	if err := lay.WriteAppStatus(st); err != nil {
		h.Broker.Close()
		h.stopComponents(context.Background())
		ledger.Close()
		return fail(err)
	}
	return h, ln, nil
}

// Team is the team the hub hosts now: settings.json's as hm up loaded it,
// or as the last hm reload applied it.
func (h *Hub) Team() *roles.Team { return h.team.Load() }

// SessionID is "app-session-N".
func (h *Hub) SessionID() string { return roles.SessionID(h.Session) }

// URL is the hub's WebSocket URL.
func (h *Hub) URL() string { return "ws://127.0.0.1:" + strconv.Itoa(h.Port) + "/" }

func (h *Hub) serve(ctx context.Context, ln net.Listener) error {
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	mux := http.NewServeMux()
	mux.Handle("/", browserToCockpit(h.Broker.Handler()))
	h.mountEndpoints(baseCtx, mux)
	srv := &http.Server{
		Handler:           loopbackOnly(mux),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cmp.Or(h.opts.IdleTimeout, defaultIdleTimeout),
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	if err := h.Layout.WriteHubInfo(layout.HubInfo{PID: os.Getpid(), Port: h.Port, URL: h.URL(), Session: h.Session}); err != nil {
		h.log.Error("write hub.json", "err", err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	h.startup(runCtx)
	if h.fed != nil {
		h.fed.run(runCtx) // after Recover: its rows are forwarded or in the ledger first
	}
	var wg sync.WaitGroup
	h.runLoops(runCtx, &wg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := h.opts.ReminderEvery
		if every <= 0 {
			every = 30 * time.Second
		}
		h.Broker.RunReminders(runCtx, every)
	}()
	h.log.Info("hub up", "url", h.URL(), "session", h.Session, "root", h.Layout.Root, "pid", os.Getpid())
	if h.opts.Ready != nil {
		h.opts.Ready(h)
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("serve: %w", err)
	}
	h.log.Info("hub stopping", "session", h.Session)
	stopRun()
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Stop accepting, end hijacked WebSocket handlers, then drain.
	srv.SetKeepAlivesEnabled(false)
	ln.Close()
	h.stopComponents(shutCtx)
	h.Broker.Close()
	cancelBase()
	if serr := srv.Shutdown(shutCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		h.log.Warn("http shutdown", "err", serr)
	}
	wg.Wait()
	h.finalHandoff(shutCtx)
	if cerr := h.Ledger.Close(); cerr != nil {
		h.log.Error("close ledger", "err", cerr)
	}
	_ = os.Remove(h.Layout.HubJSON())
	if st, rerr := h.Layout.ReadAppStatus(); rerr == nil {
		st.LastUpdated = time.Now().UTC().Format(time.RFC3339)
		st.Hub = nil
		_ = h.Layout.WriteAppStatus(st)
	}
	h.log.Info("hub stopped", "session", h.Session)
	if lerr := h.lock.Release(); lerr != nil {
		h.log.Warn("release hub lock", "err", lerr)
	}
	return err
}

// loopbackOnly refuses every request whose Host header is not a loopback
// name or address, on every endpoint: a page on another site that resolves
// its own name to 127.0.0.1 (DNS rebinding) would otherwise pass a
// same-origin check, since its Origin then matches its Host.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !broker.LoopbackHost(r.Host) {
			http.Error(w, "hm: only loopback hosts are served", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loadTeam is the team the hub hosts: settings.json's (or the default
// team), or with demo the tour's team, whatever settings.json says.
func loadTeam(lay layout.Layout, demo bool) (*roles.Team, error) {
	if demo {
		return roles.Demo(), nil
	}
	return roles.Load(lay.Settings())
}
