package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"sync"
	"time"

	"hm/roles"
)

// ReloadResult is what hm reload did (POST /reload's answer): the panes
// added, removed, restarted and left untouched, by role, and the
// settings.json keys that changed but that the hub reads only when it
// starts.
type ReloadResult struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Restarted []string `json:"restarted"`
	Unchanged []string `json:"unchanged"`
	// NeedsRestart names the changed keys that take effect at the next
	// hm restart; until then the hub keeps their old values.
	NeedsRestart []string `json:"needsRestart"`
	// Warnings are what settings.json holds that hm ignores (unknown keys).
	Warnings []string `json:"warnings,omitempty"`
}

// ErrReloadDemo is Reload's error in a hub that hosts the tour's team
// (hm up --demo), which does not read settings.json.
var ErrReloadDemo = errors.New("this hub runs the tour's team (hm up --demo), which ignores settings.json: nothing to reload")

// reloadStopWait bounds how long a reload waits for one removed or
// restarted pane's program to end (SIGHUP, then SIGKILL after the kill
// grace).
const reloadStopWait = 30 * time.Second

// Reload reads settings.json again and applies it: panes removed from it
// end (what they had queued fails, see agent.Pane.End), panes added start
// and get their session's first message, panes whose program would run
// otherwise (agent.Spec.SameRun: command, profile, environment, names) are
// restarted with their queue kept, and the others are not touched.
// Settings the hub reads only when it starts keep their old values and
// are named in NeedsRestart. Invalid settings change nothing: the error
// says why. Reloads run one at a time.
func (h *Hub) Reload(ctx context.Context) (ReloadResult, error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	if h.opts.Demo {
		return ReloadResult{}, ErrReloadDemo
	}
	loaded, err := roles.Load(h.Layout.Settings())
	if err != nil {
		return ReloadResult{}, err
	}
	old := h.Team()
	if loaded, err = loaded.KeepPaneIDs(old); err != nil {
		return ReloadResult{}, fmt.Errorf("settings %s: %w", h.Layout.Settings(), err)
	}
	next, needsRestart, err := keepHubWide(old, loaded)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("settings %s: %w", h.Layout.Settings(), err)
	}
	res := ReloadResult{NeedsRestart: needsRestart, Warnings: loaded.Warnings}
	if h.panes == nil { // hm up --no-panes: only the team changes
		h.setTeam(next)
		return res.listed(), nil
	}
	plan := h.planPanes(old, next)
	started := h.startAdded(next, plan.add)
	h.setTeam(next)
	h.greetAdded(ctx, started)
	h.endRemoved(ctx, plan.remove)
	h.restartChanged(ctx, next, plan.restart)
	for _, m := range started {
		res.Added = append(res.Added, m.Role)
	}
	res.Removed, res.Unchanged = plan.remove, plan.same
	for _, m := range plan.restart {
		res.Restarted = append(res.Restarted, m.Role)
	}
	h.log.Info("settings reloaded", "added", res.Added, "removed", res.Removed, "restarted", res.Restarted, "needs restart", res.NeedsRestart)
	return res.listed(), nil
}

// listed makes r's nil lists empty, so that --json shows [] for none.
func (r ReloadResult) listed() ReloadResult {
	for _, l := range []*[]string{&r.Added, &r.Removed, &r.Restarted, &r.Unchanged, &r.NeedsRestart} {
		if *l == nil {
			*l = []string{}
		}
	}
	return r
}

// setTeam makes t the team the hub and its broker serve.
func (h *Hub) setTeam(t *roles.Team) {
	h.team.Store(t)
	h.Broker.SetTeam(t)
}

// hubWideKey is a settings.json key the hub reads only when it starts:
// same compares it in two teams, keep copies it from one to another.
type hubWideKey struct {
	key  string
	same func(a, b *roles.Team) bool
	keep func(dst, src *roles.Team)
}

// hubWideField is the hubWideKey of the team field f points to.
func hubWideField[T any](key string, f func(*roles.Team) *T) hubWideKey {
	return hubWideKey{key: key,
		same: func(a, b *roles.Team) bool { return reflect.DeepEqual(*f(a), *f(b)) },
		keep: func(dst, src *roles.Team) { *f(dst) = *f(src) }}
}

// hubWide lists the keys the hub reads only when it starts: the listener,
// the Telegram relay, federation, the waiting watch, the panes' keeper,
// the profiling endpoint and the notifier are made once. (The background
// slots too: keepHubWide keeps them with roles.Team.WithBackgroundOf.)
var hubWide = []hubWideKey{
	hubWideField("port", func(t *roles.Team) *int { return &t.Port }),
	hubWideField("telegram", func(t *roles.Team) *roles.Telegram { return &t.Telegram }),
	hubWideField("nats", func(t *roles.Team) *roles.NATS { return &t.NATS }),
	hubWideField("waitingForHumanMinutes", func(t *roles.Team) *time.Duration { return &t.WaitingNotice }),
	hubWideField("paneKeepMinutes", func(t *roles.Team) *time.Duration { return &t.PaneKeep }),
	hubWideField("pprof", func(t *roles.Team) *bool { return &t.Pprof }),
	hubWideField("notifications", func(t *roles.Team) *roles.Notifications { return &t.Notifications }),
}

// keepHubWide returns loaded with old's values of the keys the hub reads
// only when it starts, and the names of those that changed.
func keepHubWide(old, loaded *roles.Team) (*roles.Team, []string, error) {
	var changed []string
	for _, k := range hubWide {
		if !k.same(old, loaded) {
			changed = append(changed, k.key)
		}
	}
	if old.Background != loaded.Background || !reflect.DeepEqual(old.BackgroundMembers(), loaded.BackgroundMembers()) {
		changed = append(changed, "background")
	}
	next, err := loaded.WithBackgroundOf(old)
	if err != nil {
		return nil, nil, fmt.Errorf("the running background slots stay as they are until hm restart, but %w", err)
	}
	for _, k := range hubWide {
		k.keep(next, old)
	}
	return next, changed, nil
}

// panePlan is what a reload does to the panes: members to add and to
// restart (of the new team), roles to remove and roles left as they are.
type panePlan struct {
	add, restart []roles.Member
	remove, same []string
}

// planPanes compares the panes the hub hosts for old's members with the
// pty members of next.
func (h *Hub) planPanes(old, next *roles.Team) panePlan {
	var plan panePlan
	kept := map[string]bool{}
	for _, m := range next.Members() {
		if m.Transport != roles.TransportPTY {
			continue
		}
		kept[m.Role] = true
		p, ok := h.panes.get(m.Role)
		switch {
		case !ok:
			plan.add = append(plan.add, m)
		case !h.paneSpec(next, m, true).SameRun(p.Spec()):
			plan.restart = append(plan.restart, m)
		default:
			plan.same = append(plan.same, m.Role)
		}
	}
	for _, m := range old.Members() {
		if _, hosted := h.panes.get(m.Role); hosted && !kept[m.Role] {
			plan.remove = append(plan.remove, m.Role)
		}
	}
	return plan
}

// startAdded starts the panes of ms and returns the members whose pane
// started, before the team that names them is served: a message for
// them finds their pane.
func (h *Hub) startAdded(team *roles.Team, ms []roles.Member) []roles.Member {
	var started []roles.Member
	for _, m := range ms {
		p, err := h.startPane(h.panes, team, m)
		if err != nil {
			h.log.Error("reload: start pane", "role", m.Role, "err", err)
			continue
		}
		h.panes.add(m.Role, p)
		started = append(started, m)
	}
	return started
}

// greetAdded types the session's first message into the added panes (the
// architect's includes the session's briefing, as hm up wrote it).
func (h *Hub) greetAdded(ctx context.Context, ms []roles.Member) {
	if len(ms) == 0 {
		return
	}
	briefing, err := os.ReadFile(h.Layout.Briefing())
	if err != nil {
		h.log.Warn("reload: read the session's briefing", "err", err)
	}
	h.greet(ctx, ms, briefing, time.Now())
}

// endRemoved ends the panes of roles, in parallel, once the team no longer
// names them (a send to them is refused invalid_target): what they had
// queued fails with the reason (agent.Pane.End) and their token ends.
func (h *Hub) endRemoved(ctx context.Context, removed []string) {
	var wg sync.WaitGroup
	for _, role := range removed {
		p, ok := h.panes.get(role)
		if !ok {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, reloadStopWait)
			defer cancel()
			if err := p.End(ctx, fmt.Errorf("%s was removed from settings.json (hm reload) before the message was typed", role)); err != nil {
				h.log.Warn("reload: stop removed pane", "role", role, "err", err)
			}
			h.panes.remove(role)
			h.Tokens.Revoke(role)
		})
	}
	wg.Wait()
}

// restartChanged replaces the panes of ms, in parallel, with panes of
// their new spec: the old program ends (SIGHUP), its token with it, a new
// one starts, and the messages queued for the old pane, those a dispatch
// gives it meanwhile included, are typed into the new one
// (agent.Pane.ForwardQueued).
func (h *Hub) restartChanged(ctx context.Context, team *roles.Team, ms []roles.Member) {
	var wg sync.WaitGroup
	for _, m := range ms {
		old, ok := h.panes.get(m.Role)
		if !ok {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, reloadStopWait)
			defer cancel()
			if err := old.Stop(ctx); err != nil {
				h.log.Warn("reload: stop changed pane", "role", m.Role, "err", err)
			}
			h.Tokens.Revoke(m.Role)
			p, err := h.startPane(h.panes, team, m)
			if err != nil {
				old.FailQueued(fmt.Errorf("%s could not be restarted by hm reload: %w", m.Role, err))
				h.panes.remove(m.Role)
				h.log.Error("reload: restart pane", "role", m.Role, "err", err)
				return
			}
			old.ForwardQueued(p)
			h.panes.add(m.Role, p)
		})
	}
	wg.Wait()
}

// serveReload answers POST /reload (behind operatorOnly): the
// ReloadResult, or 422 with {"error": …} when the settings are not valid.
func (h *Hub) serveReload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// A client that goes away does not cut a reload short: panes half
	// replaced would be worse than an answer nobody reads.
	res, err := h.Reload(context.WithoutCancel(r.Context()))
	if err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(res)
}
