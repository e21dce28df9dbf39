// Package slots runs the background builder slots (SPEC §8): spawn, kill,
// list and the target map; a slot ends on its done marker, after its idle
// TTL, when its owner's pane exits or when the hub stops, and its pane token
// ends with it. The hub that composes it provides panes, tokens and the
// broker through Host.
package slots

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/roles"
)

// DoneMarker is the line a background agent prints to end its slot.
const DoneMarker = "__HM_BG_DONE__"

// Slot end reasons.
const (
	EndTaskCompleted = "task_completed"
	EndIdleTTL       = "idle_ttl_expired"
	EndKilled        = "killed"
	EndOwnerExited   = "owner_exited"
	EndExited        = "exited"
	EndHubStopped    = "hub_stopped"
)

// Host is what the slots need from the hub that composes them.
type Host interface {
	// PaneSpec is the spec of a slot's pane (environment with a fresh
	// token, log path, pointer directory), without restarts.
	PaneSpec(m roles.Member) agent.Spec
	// StartPane starts a pane for spec under the host's pane lifetime.
	StartPane(spec agent.Spec) (*agent.Pane, error)
	// AddPane makes a started slot pane reachable (delivery, attach);
	// RemovePane undoes it.
	AddPane(role string, p *agent.Pane)
	RemovePane(role string)
	// RevokeToken ends the token issued for role.
	RevokeToken(role string)
	// Submit commits a message through the broker.
	Submit(ctx context.Context, s broker.Submission) error
}

// Config configures a Set.
type Config struct {
	// Owner is the role that owns the slots (builder).
	Owner roles.Member
	// Members are the slot members; slot N is Members[N-1].
	Members []roles.Member
	// IdleTTL ends a slot after this long without input or output.
	IdleTTL time.Duration
	Host    Host
	Logger  *slog.Logger
}

// Set runs the owner-bound background slots (SPEC §8) and implements
// broker.Background.
type Set struct {
	host    Host
	log     *slog.Logger
	owner   roles.Member
	members []roles.Member
	idleTTL time.Duration

	mu      sync.Mutex
	running map[int]*slot
	// started wakes Run when a slot starts (buffered 1): with none running
	// Run waits on it, with no timer.
	started chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

type slot struct {
	m         roles.Member
	pane      *agent.Pane
	command   string
	createdAt time.Time
	ending    bool
	// endOnStart is the reason of an end that came (done marker, exit)
	// before Spawn had the pane; Spawn ends the slot once it has it.
	endOnStart string
}

// New returns the slots of cfg, none running.
func New(cfg Config) *Set {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Set{host: cfg.Host, log: log, owner: cfg.Owner, members: cfg.Members, idleTTL: cfg.IdleTTL, running: map[int]*slot{},
		started: make(chan struct{}, 1)}
}

// Owner is the member that owns the slots.
func (s *Set) Owner() roles.Member { return s.owner }

// Running implements broker.Background.
func (s *Set) Running(role string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.running {
		if sl.m.Role == role && !sl.ending {
			return true
		}
	}
	return false
}

// Lookup finds a running slot's pane by N, alias, header or pane id.
func (s *Set) Lookup(name string) (*agent.Pane, bool) {
	m, ok := s.resolve(name)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl, ok := s.running[m.Slot]; ok {
		return sl.pane, true
	}
	return nil, false
}

// resolve maps N, alias, header or pane id to a slot member.
func (s *Set) resolve(name string) (roles.Member, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if n, err := strconv.Atoi(name); err == nil {
		for _, m := range s.members {
			if m.Slot == n {
				return m, true
			}
		}
		return roles.Member{}, false
	}
	for _, m := range s.members {
		if name == m.Role || name == strings.ToLower(m.PaneID) || name == strings.ToLower(m.Header) {
			return m, true
		}
	}
	return roles.Member{}, false
}

type slotPayload struct {
	Slot    json.RawMessage `json:"slot"`
	Alias   string          `json:"alias"`
	Target  json.RawMessage `json:"target"`
	Command string          `json:"command"`
	Task    string          `json:"task"`
}

func rawString(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(r, &n) == nil {
		return n.String()
	}
	return string(r)
}

func refusal(code status.Code, msg string) (proto.BgResult, bool) {
	return proto.BgRefusal{Status: code, Error: msg}, false
}

// Handle implements broker.Background.
func (s *Set) Handle(ctx context.Context, action string, payload json.RawMessage) (proto.BgResult, bool) {
	var p slotPayload
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &p); err != nil {
			return refusal(status.CodeBadRequest, "payload: "+err.Error())
		}
	}
	switch action {
	case "spawn":
		return s.spawn(ctx, p)
	case "kill":
		target := rawString(p.Target)
		if target == "" {
			target = p.Alias
		}
		if target == "" {
			target = rawString(p.Slot)
		}
		m, ok := s.resolve(target)
		if !ok {
			return refusal(status.CodeInvalidTarget, fmt.Sprintf("no background slot %q", target))
		}
		if !s.end(m.Slot, EndKilled) {
			return refusal(status.CodeNotRunning, m.Role+" is not running")
		}
		return proto.BgKillResult{OK: true, Alias: m.Role, PaneID: m.PaneID, Reason: EndKilled}, true
	case "kill-all":
		return proto.BgKillAllResult{OK: true, Killed: s.endAll(EndKilled)}, true
	case "list":
		return proto.BgListResult{OK: true, Agents: s.List()}, true
	case "target-map":
		aliases, ids := []string{}, []string{}
		for _, m := range s.members {
			aliases, ids = append(aliases, m.Role), append(ids, m.PaneID)
		}
		return proto.BgTargetMapResult{OK: true, OwnerPaneID: s.owner.PaneID, MaxAgents: len(s.members), Aliases: aliases, PaneIDs: ids}, true
	}
	return refusal(status.CodeBadRequest, fmt.Sprintf("unknown action %q (spawn, kill, kill-all, list, target-map)", action))
}

func (s *Set) spawn(ctx context.Context, p slotPayload) (proto.BgResult, bool) {
	want := rawString(p.Slot)
	if want == "" {
		want = p.Alias
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return refusal(status.CodeSlotUnavailable, "the hub is stopping")
	}
	var m roles.Member
	if want != "" {
		var ok bool
		if m, ok = s.resolve(want); !ok {
			s.mu.Unlock()
			return refusal(status.CodeSlotUnavailable, fmt.Sprintf("no background slot %q (1..%d)", want, len(s.members)))
		}
		if _, busy := s.running[m.Slot]; busy {
			s.mu.Unlock()
			return refusal(status.CodeSlotUnavailable, m.Role+" is already running")
		}
	} else {
		found := false
		for _, c := range s.members {
			if _, busy := s.running[c.Slot]; !busy {
				m, found = c, true
				break
			}
		}
		if !found {
			s.mu.Unlock()
			return refusal(status.CodeCapacityReached, fmt.Sprintf("all %d background slots are running", len(s.members)))
		}
	}
	command := p.Command
	if command == "" {
		command = m.Command
	}
	sl := &slot{m: m, command: command, createdAt: time.Now()}
	s.running[m.Slot] = sl // reserve before starting
	s.mu.Unlock()
	select {
	case s.started <- struct{}{}:
	default:
	}

	spec := s.host.PaneSpec(roles.Member{Role: m.Role, PaneID: m.PaneID, Header: m.Header, Command: command, Profile: m.Profile,
		Background: true, Owner: m.Owner, Slot: m.Slot})
	spec.OnLine = func(line string) {
		if strings.TrimSpace(line) == DoneMarker {
			s.endAsync(sl, EndTaskCompleted)
		}
	}
	spec.OnExit = func(code int, err error) { s.endAsync(sl, EndExited) }
	pane, err := s.host.StartPane(spec)
	if err != nil {
		s.mu.Lock()
		delete(s.running, m.Slot)
		s.mu.Unlock()
		s.host.RevokeToken(m.Role)
		return refusal(status.CodeSlotUnavailable, "start: "+err.Error())
	}
	s.host.AddPane(m.Role, pane)
	s.mu.Lock()
	sl.pane = pane
	early := sl.endOnStart
	s.mu.Unlock()
	if early != "" {
		s.endAsync(sl, early)
	}
	brief := roles.BackgroundBrief(m, "")
	if err := s.host.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: m.Role, Content: brief, Raw: true, Channel: broker.ChannelSystem, SessionScoped: true}); err != nil {
		s.log.Warn("background brief", "slot", m.Role, "err", err)
	}
	if strings.TrimSpace(p.Task) != "" {
		if err := s.host.Submit(ctx, broker.Submission{From: s.owner.Role, Target: m.Role, Content: "TASK: " + p.Task, Channel: broker.ChannelSystem}); err != nil {
			s.log.Warn("background task", "slot", m.Role, "err", err)
		}
	}
	s.log.Info("background slot started", "slot", m.Role, "command", command)
	return proto.BgSpawnResult{OK: true, Alias: m.Role, PaneID: m.PaneID, OwnerPaneID: s.owner.PaneID, Status: "starting"}, true
}

// List describes the running slots, in slot order.
func (s *Set) List() []proto.BgAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []proto.BgAgent{}
	for _, m := range s.members {
		sl, ok := s.running[m.Slot]
		if !ok || sl.pane == nil {
			continue
		}
		st := sl.pane.Status()
		status := "running"
		if st.State == "starting" || st.State == "exited" {
			status = string(st.State)
		}
		if sl.ending {
			status = "stopping"
		}
		out = append(out, proto.BgAgent{
			Alias: m.Role, PaneID: m.PaneID, OwnerPaneID: s.owner.PaneID, Command: sl.command,
			Status: status, PID: st.PID, CreatedAtMs: sl.createdAt.UnixMilli(), LastActivityAtMs: st.LastActivity.UnixMilli(),
			Queued: st.Queued,
		})
	}
	return out
}

// endAsync ends run sl of a slot from a pane callback (which must not
// block): only while that run is the slot's, since the callback may run
// after the slot was ended and spawned again.
func (s *Set) endAsync(sl *slot, reason string) {
	s.async(func() { s.endRun(sl.m.Slot, sl, reason) })
}

// async runs fn on a goroutine tracked for stop, unless the set is stopping.
func (s *Set) async(fn func()) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// end stops a running slot and tells the owner. It reports whether the slot
// was running.
func (s *Set) end(slotNo int, reason string) bool { return s.endRun(slotNo, nil, reason) }

// endRun is end for run only, when it is not nil.
func (s *Set) endRun(slotNo int, run *slot, reason string) bool {
	s.mu.Lock()
	sl, ok := s.running[slotNo]
	if ok && run != nil && sl != run {
		ok = false // a later run of the slot
	}
	if ok && sl.pane == nil && sl.endOnStart == "" {
		sl.endOnStart = reason // still starting: Spawn ends it
	}
	if !ok || sl.ending || sl.pane == nil {
		s.mu.Unlock()
		return false
	}
	sl.ending = true
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// What was queued for the slot can no longer be typed: End fails it
	// rather than leave it pending for a slot that is gone, and so too what
	// a dispatch that found the pane before its removal enqueues later.
	if err := sl.pane.End(ctx, fmt.Errorf("%s ended (%s) before the message was typed", sl.m.Role, reason)); err != nil {
		s.log.Warn("stop background slot", "slot", sl.m.Role, "err", err)
	}
	s.host.RemovePane(sl.m.Role)
	s.host.RevokeToken(sl.m.Role)
	s.mu.Lock()
	delete(s.running, slotNo)
	stopped := s.stopped
	s.mu.Unlock()
	s.log.Info("background slot ended", "slot", sl.m.Role, "reason", reason)
	if !stopped && reason != EndOwnerExited {
		text := fmt.Sprintf("%s ended: %s", sl.m.Role, reason)
		if err := s.host.Submit(ctx, broker.Submission{From: roles.RoleSystem, Target: s.owner.Role, Content: text, Channel: broker.ChannelSystem, SessionScoped: true}); err != nil {
			s.log.Warn("notify owner", "slot", sl.m.Role, "err", err)
		}
	}
	return true
}

// OwnerExited ends every slot (owner_exited); it does not block, so that
// the owner pane's exit callback may call it.
func (s *Set) OwnerExited() { s.async(func() { s.endAll(EndOwnerExited) }) }

// endAll ends every running slot and returns their aliases.
func (s *Set) endAll(reason string) []string {
	s.mu.Lock()
	var nums []int
	for _, m := range s.members {
		if sl, ok := s.running[m.Slot]; ok && !sl.ending && sl.pane != nil {
			nums = append(nums, m.Slot)
		}
	}
	s.mu.Unlock()
	killed := []string{}
	for _, n := range nums {
		if s.end(n, reason) {
			killed = append(killed, s.members[n-1].Role)
		}
	}
	return killed
}

// Run expires idle slots until ctx ends. It checks them every quarter of
// the idle TTL (at most every second) while a slot runs, and waits with no
// timer while none does.
func (s *Set) Run(ctx context.Context) {
	every := s.idleTTL / 4
	if every > time.Second {
		every = time.Second
	}
	if every < 10*time.Millisecond {
		every = 10 * time.Millisecond
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		if !s.anyRunning() {
			t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-s.started:
			}
		}
		t.Reset(every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.expireIdle(time.Now())
	}
}

// anyRunning reports whether a slot is running or starting.
func (s *Set) anyRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running) > 0
}

// expireIdle ends the slots idle for longer than the idle TTL at now.
func (s *Set) expireIdle(now time.Time) {
	s.mu.Lock()
	var idle []int
	for n, sl := range s.running {
		if sl.pane == nil || sl.ending {
			continue
		}
		last := sl.pane.Status().LastActivity
		if last.Before(sl.createdAt) {
			last = sl.createdAt
		}
		if now.Sub(last) > s.idleTTL {
			idle = append(idle, n)
		}
	}
	s.mu.Unlock()
	for _, n := range idle {
		s.end(n, EndIdleTTL)
	}
}

// Stop ends every slot (hub_stopped) and waits for pending ends; no slot
// starts after it.
func (s *Set) Stop(ctx context.Context) {
	s.endAll(EndHubStopped)
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
}
