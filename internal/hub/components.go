package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/telegram"
	"hm/internal/ground/periodic"
	"hm/roles"
	"hm/triggers"
)

// startComponents starts the components the broker depends on and fills deps.
func (h *Hub) startComponents(ctx context.Context, deps *broker.Deps) error {
	if !h.opts.NoPanes {
		h.recoverEntered(ctx)
		h.panes = newPaneSet(h.log.With("component", "panes"), h.Team, h.act)
		h.slots = h.newSlots() // before the owner's pane, whose exit ends them
		h.startPanes(h.panes)
		deps.Panes = h.panes
		h.components = append(h.components, h.panes)
	}
	cfg, err := telegram.LoadConfig(h.Layout.Root, h.Team().Telegram.ChatID, h.Team().Telegram.Allowlist, h.opts.Getenv)
	if err != nil {
		return fmt.Errorf("telegram config: %w", err)
	}
	if cfg.Enabled() {
		cfg.Logger = h.log.With("component", "telegram")
		if h.opts.TelegramPoll > 0 {
			cfg.PollTimeout = h.opts.TelegramPoll
		}
		relay, err := telegram.New(cfg, telegramStore{h}, h.telegramDeliver)
		if err != nil {
			return fmt.Errorf("telegram relay: %w", err)
		}
		h.relay = relay
		deps.Telegram = relay
	}
	h.notifier = h.newNotifier()
	deps.Notices = h.notifier
	if h.slots != nil {
		deps.Background = h.slots
		h.components = append(h.components, slotComponent{h.slots})
	}
	if err := h.startFederation(ctx, deps); err != nil {
		return fmt.Errorf("federation: %w", err)
	}
	// Made here, before /status serves, so that Snapshot reads a field
	// nobody writes afterwards; runLoops runs it.
	rescan := h.opts.TriggerRescan
	if rescan <= 0 {
		rescan = 2 * time.Second
	}
	h.watcher = triggers.NewWatcher(h.Layout.Triggers(), h.triggerSink, triggers.Options{Rescan: rescan, Logger: h.log.With("component", "triggers")})
	return nil
}

// mountEndpoints adds the components' HTTP endpoints: /attach/<pane>,
// /status, /reload (hm reload), the web cockpit under /ui/ and /debug/pprof/ (404 unless
// profiling is on).
func (h *Hub) mountEndpoints(ctx context.Context, mux *http.ServeMux) {
	// Mounted even without panes, so that /attach/<x> gets a clear 404.
	attach := h.attachBudget()
	mux.Handle("/attach/", attach(agent.AttachHandlerContext(ctx, h.lookupPane, h.authorizeAttach, h.log.With("component", "attach"))))
	mux.Handle("/status", h.operatorOnly(http.HandlerFunc(h.serveStatus)))
	mux.Handle("/reload", h.operatorOnly(http.HandlerFunc(h.serveReload)))
	ui := h.cockpitHandler(ctx, attach)
	mux.Handle(cockpitPath, ui)
	mux.Handle("/ui", ui)
	mux.Handle("/debug/pprof/", h.pprofHandler())
}

// defaultMaxAttach is the default budget of attach connections.
const defaultMaxAttach = 64

// attachBudget returns the wrapper that keeps /attach/ and /ui/attach/
// sessions, together, within one budget (Options.MaxAttach): attach
// viewers cannot crowd out agents, nor agents them.
func (h *Hub) attachBudget() func(http.Handler) http.Handler {
	max := h.opts.MaxAttach
	if max <= 0 {
		max = defaultMaxAttach
	}
	b := broker.NewBudget("attach connections", max, "detach sessions you no longer use (hm attach, cockpit tabs) and retry")
	log := h.log.With("component", "attach")
	return func(next http.Handler) http.Handler { return b.Limit(next, log) }
}

// browserToCockpit sends a browser that opens the hub's address (a GET or
// HEAD of / that asks for no WebSocket upgrade) to the cockpit at /ui/,
// which says how to log in; everything else at /, the WebSocket clients
// above all, goes to ws as before. A browser used to get "WebSocket
// protocol violation" there (issue #34).
func browserToCockpit(ws http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && !asksWebSocket(r.Header) {
			http.Redirect(w, r, cockpitPath, http.StatusFound)
			return
		}
		ws.ServeHTTP(w, r)
	})
}

// cockpitPath is where the cockpit is served.
const cockpitPath = "/ui/"

// asksWebSocket reports whether a request's Upgrade header names the
// WebSocket protocol (tokens, case-insensitive, RFC 7230 §6.7).
func asksWebSocket(h http.Header) bool {
	for _, v := range h.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

// lookupPane finds the pane an /attach/ name stands for: a member of the
// team (role, pane id, header or alias) first, then a running background
// slot (N, alias, header or pane id). A name the team knows never reaches a
// slot: a slot's number is also a pane id ("1" is the first pane, not slot
// 1). authorizeAttach checks the token against the pane found here.
func (h *Hub) lookupPane(name string) (*agent.Pane, bool) {
	if t, err := h.Team().Resolve(name); err == nil && t.Kind == roles.TargetMember {
		if h.panes == nil {
			return nil, false
		}
		return h.panes.get(t.Member.Role)
	}
	if h.slots != nil {
		return h.slots.Lookup(name)
	}
	return nil, false
}

// runLoops starts the components' loops under ctx, tracked by wg: the
// trigger watcher, the Telegram relay, the slots' idle reaper, the
// notifier, the watch on panes waiting for a person and the handoff
// writer.
func (h *Hub) runLoops(ctx context.Context, wg *sync.WaitGroup) {
	w := h.watcher
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Error("trigger watcher stopped", "err", err)
		}
	}()
	if h.relay != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.relay.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Error("telegram relay stopped", "err", err)
			}
		}()
	}
	if h.slots != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.slots.Run(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.notifier.Run(ctx)
	}()
	if after := h.waitingNotice(); after > 0 && h.panes != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.watchWaiting(ctx, after)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.act.followLedger(ctx, h.Ledger)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.runHandoff(ctx)
	}()
}

// runHandoff rewrites the handoff after the ledger commits, at most every
// HandoffEvery (30 s): while nothing commits it sleeps (#36).
func (h *Hub) runHandoff(ctx context.Context) {
	every := h.opts.HandoffEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	commits, unlisten := h.act.commits.Listen()
	defer unlisten()
	periodic.Armed(ctx, commits, every, func() time.Duration {
		h.act.looks.handoff.Add(1)
		_, _ = h.writeHandoff(ctx)
		return 0
	})
}

// stopComponents stops components in reverse order.
func (h *Hub) stopComponents(ctx context.Context) {
	for i := len(h.components) - 1; i >= 0; i-- {
		h.components[i].stop(ctx)
	}
}
