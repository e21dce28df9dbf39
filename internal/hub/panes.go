package hub

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/ground/paneevents"
	"hm/internal/launchwire"
	"hm/roles"
)

// paneSet hosts the team's pty members and implements broker.Panes.
type paneSet struct {
	log    *slog.Logger
	team   func() *roles.Team // the hub's team now (Hub.Team)
	ctx    context.Context
	cancel context.CancelFunc

	act *activity // rung by the panes' output, hook reports and additions

	mu       sync.RWMutex
	panes    map[string]*agent.Pane // role -> pane
	unfollow map[string]func()      // role -> ends act's following of its output

	// leave, set by Hub.LeavePanes, makes stop leave the programs to
	// their keepers for the next hub (agent.Pane.Leave).
	leave atomic.Bool

	// killBeforeEnter, killAtEnter and killAfterEnter, when positive, are
	// faults for the e2e fault suite: the hub kills itself with SIGKILL
	// right after the Nth pane typing was recorded, before its Enter
	// (HM_FAULT_KILL_BEFORE_ENTER=N); right after the Nth first Enter left
	// the hub, before anything recorded it (HM_FAULT_KILL_AT_ENTER=N,
	// agent.Spec.FaultAtEnter); or right after the Nth first Enter was
	// written and put in the entered log, before the ledger records it
	// (HM_FAULT_KILL_AFTER_ENTER=N).
	killBeforeEnter, killAtEnter, killAfterEnter atomic.Int64
}

// The fault variables (see paneSet.killBeforeEnter).
const (
	faultKillBeforeEnter = "HM_FAULT_KILL_BEFORE_ENTER"
	faultKillAtEnter     = "HM_FAULT_KILL_AT_ENTER"
	faultKillAfterEnter  = "HM_FAULT_KILL_AFTER_ENTER"
)

func newPaneSet(log *slog.Logger, team func() *roles.Team, act *activity) *paneSet {
	ctx, cancel := context.WithCancel(context.Background())
	s := &paneSet{log: log, team: team, act: act, ctx: ctx, cancel: cancel, panes: map[string]*agent.Pane{}, unfollow: map[string]func(){}}
	for _, f := range []struct {
		name string
		n    *atomic.Int64
	}{{faultKillBeforeEnter, &s.killBeforeEnter}, {faultKillAtEnter, &s.killAtEnter}, {faultKillAfterEnter, &s.killAfterEnter}} {
		if n, err := strconv.Atoi(os.Getenv(f.name)); err == nil && n > 0 {
			log.Warn("fault injection: the hub kills itself at a pane's Enter", "var", f.name, "n", n)
			f.n.Store(int64(n))
		}
	}
	return s
}

// fault runs a kill fault counted by n, if armed.
func fault(n *atomic.Int64) {
	if n.Load() > 0 && n.Add(-1) == 0 {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // until the signal lands
	}
}

// atEnterFault is the panes' agent.Spec.FaultAtEnter: nil unless
// HM_FAULT_KILL_AT_ENTER armed it.
func (s *paneSet) atEnterFault() func() {
	if s.killAtEnter.Load() <= 0 {
		return nil
	}
	return func() { fault(&s.killAtEnter) }
}

// Hosted implements broker.Panes.
func (s *paneSet) Hosted(role string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.panes[role]
	return ok
}

// Deliver implements broker.Panes.
func (s *paneSet) Deliver(role string, d broker.PaneDelivery) {
	s.mu.RLock()
	p, ok := s.panes[role]
	s.mu.RUnlock()
	if !ok {
		if d.Failed != nil {
			d.Failed(errNoPane(role))
		}
		return
	}
	p.Enqueue(agent.Delivery{MessageID: d.MessageID, Content: d.Content, Urgent: d.Urgent, Claimable: d.Claimable,
		// The ledger records the typing before Enter and routed once the
		// program took it: a crash in between leaves the message pending,
		// typed again after restart into the new program (the old one
		// died with the hub's terminal), unless the pane's entered log
		// shows its Enter was written.
		Callbacks: s.faults(d.Callbacks)})
}

// faults wraps a message's callbacks with the armed kill faults (see
// paneSet.killBeforeEnter); unarmed, they pass as they are.
func (s *paneSet) faults(c paneevents.Callbacks) paneevents.Callbacks {
	var afterTyped, beforeSubmitted func()
	if s.killBeforeEnter.Load() > 0 {
		afterTyped = func() { fault(&s.killBeforeEnter) }
	}
	if s.killAfterEnter.Load() > 0 {
		beforeSubmitted = func() { fault(&s.killAfterEnter) }
	}
	return c.Wrap(afterTyped, beforeSubmitted)
}

var _ broker.PaneClaimer = (*paneSet)(nil)

// Claim implements broker.PaneClaimer: role's pane gives up queued messages
// whose typing has not begun (agent.Pane.Claim).
func (s *paneSet) Claim(role string, max int, midTurn bool) []broker.PaneClaim {
	s.mu.RLock()
	p, ok := s.panes[role]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	cs := p.Claim(max, midTurn)
	out := make([]broker.PaneClaim, len(cs))
	for i, c := range cs {
		out[i] = broker.PaneClaim{MessageID: c.MessageID, Text: c.Text, Urgent: c.Urgent, Return: func() { p.Unclaim(c) }}
	}
	return out
}

var _ broker.PaneStateReporter = (*paneSet)(nil)

// ReportState implements broker.PaneStateReporter: the state a CLI hook of
// role's pane reported (agent.Pane.ReportHookState).
func (s *paneSet) ReportState(role, state string) error {
	st, err := agent.ParseHookState(state)
	if err != nil {
		return err
	}
	s.mu.RLock()
	p, ok := s.panes[role]
	s.mu.RUnlock()
	if !ok {
		return errNoPane(role)
	}
	p.ReportHookState(st)
	s.act.changed.Ring()
	return nil
}

var _ broker.PaneSessionReporter = (*paneSet)(nil)

// ReportSession implements broker.PaneSessionReporter: the CLI session a
// hook of role's pane reported (agent.Pane.ReportSession).
func (s *paneSet) ReportSession(role, id string) error {
	p, ok := s.get(role)
	if !ok {
		return errNoPane(role)
	}
	return p.ReportSession(id)
}

type errNoPane string

func (e errNoPane) Error() string { return "no pane hosts " + string(e) }

// Health implements broker.Panes.
func (s *paneSet) Health(role string) (string, time.Time, bool) {
	s.mu.RLock()
	p, ok := s.panes[role]
	s.mu.RUnlock()
	if !ok {
		return "", time.Time{}, false
	}
	st := p.Status()
	return string(st.State), st.LastActivity, true
}

var _ broker.PaneDescriber = (*paneSet)(nil)

// Describe implements broker.PaneDescriber: the pane's state, how its
// profile reads the screen, what it waits for and how many messages it has
// queued (the status query, and so hm_status).
func (s *paneSet) Describe(role string) (proto.PaneView, bool) {
	s.mu.RLock()
	p, ok := s.panes[role]
	s.mu.RUnlock()
	if !ok {
		return proto.PaneView{}, false
	}
	st := p.Status()
	return proto.PaneView{Role: st.Role, PaneID: st.PaneID, Header: st.Header, Hosted: true, State: string(st.State),
		Readiness: st.Readiness, Waiting: st.Waiting, Queued: st.Queued, LastSeen: st.LastActivity.UnixMilli()}, true
}

// get finds the pane of role.
func (s *paneSet) get(role string) (*agent.Pane, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.panes[role]
	return p, ok
}

func (s *paneSet) add(role string, p *agent.Pane) {
	unfollow := s.act.followPane(p)
	s.mu.Lock()
	if old := s.unfollow[role]; old != nil {
		old()
	}
	s.panes[role], s.unfollow[role] = p, unfollow
	s.mu.Unlock()
}

func (s *paneSet) remove(role string) *agent.Pane {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.panes[role]
	if unfollow := s.unfollow[role]; unfollow != nil {
		unfollow()
	}
	delete(s.panes, role)
	delete(s.unfollow, role)
	s.act.changed.Ring()
	return p
}

// statuses returns every pane's status, main panes in team order first.
func (s *paneSet) statuses() []agent.Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []agent.Status
	for _, r := range s.team().Roles() {
		if p, ok := s.panes[r]; ok {
			out = append(out, p.Status())
		}
	}
	return out
}

// stop stops every pane (SIGHUP to each process group, SIGKILL after the
// grace period), in parallel; after LeavePanes it leaves them instead.
func (s *paneSet) stop(ctx context.Context) {
	s.mu.Lock()
	ps := make([]*agent.Pane, 0, len(s.panes))
	for _, p := range s.panes {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func(p *agent.Pane) {
			defer wg.Done()
			end := p.Stop
			if s.leave.Load() {
				end = p.Leave
			}
			if err := end(ctx); err != nil {
				s.log.Warn("stop pane", "role", p.Spec().Role, "err", err)
			}
		}(p)
	}
	wg.Wait()
	s.cancel()
}

// paneEnv is the environment of a hosted program (SPEC §6): the hub's own
// minus secrets (roles.Team.IsSecretEnv), minus the markers of a batch run
// (isBatchMarker) and the variables it sets itself.
func paneEnv(lay layout.Layout, team *roles.Team, m roles.Member, port int, token string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if team.IsSecretEnv(k) || isBatchMarker(k) {
			continue
		}
		switch k {
		case "SQUIDRUN_ROLE", "SQUIDRUN_PANE_ID", "SQUIDRUN_ROOT", "SQUIDRUN_PARENT_PANE_ID", "HM_PORT", "HM_SEND_PORT", "HM_TOKEN", "PATH":
			continue
		}
		env = append(env, kv)
	}
	path := os.Getenv("PATH")
	if exe, err := os.Executable(); err == nil {
		path = filepath.Dir(exe) + string(os.PathListSeparator) + path
	}
	env = append(env,
		"SQUIDRUN_ROLE="+m.Role, "SQUIDRUN_PANE_ID="+m.PaneID, "SQUIDRUN_ROOT="+lay.Root,
		"HM_PORT="+strconv.Itoa(port), "HM_TOKEN="+token, "PATH="+path)
	if m.Background {
		if owner, ok := team.Lookup(m.Owner); ok {
			env = append(env, "SQUIDRUN_PARENT_PANE_ID="+owner.PaneID)
		}
	}
	return env
}

// isBatchMarker reports whether k tells a program it runs unattended (CI=true
// and the like). A pane is a terminal a person watches: under these Gemini
// CLI runs headless and exits when stdin holds no prompt, and Ink-drawn CLIs
// stop redrawing. A command that sets one itself still gets it.
func isBatchMarker(k string) bool {
	switch k {
	case "CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "BUILD_NUMBER", "RUN_ID":
		return true
	}
	return strings.HasPrefix(k, "CI_")
}

// paneSpec is the spec of m's pane in team.
func (h *Hub) paneSpec(team *roles.Team, m roles.Member, restart bool) agent.Spec {
	return agent.Spec{
		Role: m.Role, PaneID: m.PaneID, Header: m.Header, Command: h.launchCommand(team, m), Profile: m.Profile,
		Profiles: agent.ProfilesFromSettings(team.Profiles),
		Dir:      h.Layout.Root, Env: paneEnv(h.Layout, team, m, h.Port, h.Tokens.Issue(m.Role)),
		LogPath:    filepath.Join(h.Layout.PaneLogs(), m.Role+".log"),
		EnteredLog: enteredLogPath(h.Layout, m.Role), FaultAtEnter: h.panes.atEnterFault(),
		Keeper:     h.paneKeeper(restart),
		OnAdopt:    func(env []string) { h.acceptAdopted(m.Role, env) },
		PointerDir: h.Layout.FullMessages(),
		Restart:    restart, MinBackoff: h.opts.PaneMinBackoff, MaxBackoff: h.opts.PaneMaxBackoff,
		KillGrace: h.opts.StopGracePeriod,
	}
}

// launchFiles are the files launch flags name, written at the first
// Claude pane.
type launchFiles struct {
	once  sync.Once
	files launchwire.Files
	err   error
}

// launchCommand is m's command with hm's MCP server and hooks passed by
// launch flags when it is a direct invocation of Claude Code or Codex
// (launchwire.Command), unless settings.json has "launchWiring": false.
func (h *Hub) launchCommand(team *roles.Team, m roles.Member) string {
	if team.NoLaunchWiring {
		return m.Command
	}
	if _, added := launchwire.Command(m.Command, launchwire.Files{ClaudeMCP: "x", ClaudeSettings: "x"}); added == nil {
		return m.Command
	}
	h.launch.once.Do(func() {
		h.launch.files, h.launch.err = launchwire.WriteFiles(filepath.Join(h.Layout.Runtime(), "launch"))
		if h.launch.err != nil {
			h.log.Warn("cannot write the launch files: Claude panes start without --mcp-config and --settings", "err", h.launch.err)
		}
	})
	cmd, added := launchwire.Command(m.Command, h.launch.files)
	if added != nil {
		h.log.Info("pane command: hm wiring passed by launch flags", "role", m.Role, "added", added)
	}
	return cmd
}

// startPanes starts every pty member of the team.
func (h *Hub) startPanes(ps *paneSet) {
	team := h.Team()
	for _, m := range team.Members() {
		if m.Transport != roles.TransportPTY {
			continue
		}
		if p, err := h.startPane(ps, team, m); err != nil {
			h.log.Error("start pane", "role", m.Role, "err", err)
		} else {
			ps.add(m.Role, p)
		}
	}
}

// startPane starts the pane of team's member m under ps (not yet added to
// it): restarted when its program ends, the background slots ended when
// it is their owner's.
func (h *Hub) startPane(ps *paneSet, team *roles.Team, m roles.Member) (*agent.Pane, error) {
	if why := roles.CommandProblem(m.Command, os.Getenv("PATH")); why != "" {
		h.log.Warn("pane command will not start", "role", m.Role, "command", m.Command, "why", why)
	}
	role := m.Role
	spec := h.paneSpec(team, m, true)
	spec.OnExit = func(code int, err error) {
		h.log.Info("pane program exited", "role", role, "code", code, "err", err)
		if h.slots != nil && role == h.slots.Owner().Role {
			h.slots.OwnerExited()
		}
	}
	return agent.Start(ps.ctx, spec, h.log)
}

// authorizeAttach accepts the operator token, or a pane's own token for that
// pane, as "Authorization: Bearer" or ?token=. The pane is the one
// lookupPane finds for the name, so the check and the attach agree.
func (h *Hub) authorizeAttach(r *http.Request) bool {
	id, ok := h.Tokens.Check(broker.RequestToken(r))
	if !ok {
		return false
	}
	if id.Operator {
		return true
	}
	p, ok := h.lookupPane(strings.TrimPrefix(r.URL.Path, "/attach/"))
	return ok && p.Spec().Role == id.Role
}
