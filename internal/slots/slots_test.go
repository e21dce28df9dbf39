package slots

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/agent"
	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/roles"
)

// fakeHost hosts slot panes under its own context and records what the
// slots asked of it.
type fakeHost struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc

	// startDelay delays StartPane's return after the pane started, as a
	// loaded machine may: its first output can come before Spawn has the
	// pane. Set before the first spawn.
	startDelay time.Duration
	// onRemove, if set, runs as RemovePane is called, with the pane being
	// removed. Set before the first spawn.
	onRemove func(role string, p *agent.Pane)

	mu      sync.Mutex
	panes   map[string]*agent.Pane
	revoked []string
	sent    []broker.Submission
	specs   []agent.Spec // every pane started, in order
}

func newFakeHost(t *testing.T) *fakeHost {
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeHost{t: t, ctx: ctx, cancel: cancel, panes: map[string]*agent.Pane{}}
}

func (f *fakeHost) PaneSpec(m roles.Member) agent.Spec {
	return agent.Spec{Role: m.Role, PaneID: m.PaneID, Header: m.Header, Command: m.Command, Profile: "shell", Dir: f.t.TempDir(), KillGrace: time.Second}
}

func (f *fakeHost) StartPane(spec agent.Spec) (*agent.Pane, error) {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	p, err := agent.Start(f.ctx, spec, slog.New(slog.NewTextHandler(f.t.Output(), nil)))
	time.Sleep(f.startDelay)
	return p, err
}

func (f *fakeHost) AddPane(role string, p *agent.Pane) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.panes[role] = p
}

func (f *fakeHost) RemovePane(role string) {
	f.mu.Lock()
	p := f.panes[role]
	delete(f.panes, role)
	f.mu.Unlock()
	if f.onRemove != nil && p != nil {
		f.onRemove(role, p)
	}
}

func (f *fakeHost) RevokeToken(role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, role)
}

func (f *fakeHost) Submit(ctx context.Context, s broker.Submission) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, s)
	return nil
}

// sentTo returns what was submitted to any of targets.
func (f *fakeHost) sentTo(targets ...string) []broker.Submission {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []broker.Submission
	for _, s := range f.sent {
		if slices.Contains(targets, s.Target) {
			out = append(out, s)
		}
	}
	return out
}

// told reports whether the owner got a message containing text.
func (f *fakeHost) told(owner, text string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sent {
		if s.Target == owner && strings.Contains(s.Content, text) {
			return true
		}
	}
	return false
}

func (f *fakeHost) hosted(role string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.panes[role]
	return ok
}

func members(n int, command string) []roles.Member {
	var out []roles.Member
	for i := 1; i <= n; i++ {
		out = append(out, roles.Member{Role: fmt.Sprintf("builder-bg-%d", i), PaneID: fmt.Sprintf("bg-2-%d", i),
			Header: fmt.Sprintf("BUILDER-BG-%d", i), Command: command, Background: true, Owner: "builder", Slot: i})
	}
	return out
}

// newSet returns slots over a fake host; they are stopped when the test ends.
func newSet(t *testing.T, n int, command string, ttl time.Duration) (*Set, *fakeHost) {
	t.Helper()
	host := newFakeHost(t)
	s := New(Config{Owner: roles.Member{Role: "builder", PaneID: "2", Header: "BUILDER"}, Members: members(n, command), IdleTTL: ttl, Host: host,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Stop(ctx)
		host.cancel()
	})
	return s, host
}

func handle(t *testing.T, s *Set, action string, payload string) (proto.BgResult, bool) {
	t.Helper()
	return s.Handle(context.Background(), action, json.RawMessage(payload))
}

// as returns a function that asserts a Handle result is a T.
func as[T proto.BgResult](t *testing.T) func(proto.BgResult, bool) T {
	return func(r proto.BgResult, ok bool) T {
		t.Helper()
		v, isT := r.(T)
		if !isT {
			t.Fatalf("result %#v (ok=%v) is not a %T", r, ok, v)
		}
		return v
	}
}

// status is the status of a refusal, "" for a success.
func refusalStatus(r proto.BgResult) status.Code {
	if f, ok := r.(proto.BgRefusal); ok {
		return f.Status
	}
	return ""
}

func TestResolve(t *testing.T) {
	s := New(Config{Members: members(3, "true")})
	for name, want := range map[string]string{
		"2": "builder-bg-2", "builder-bg-3": "builder-bg-3", " Builder-BG-1 ": "builder-bg-1",
		"bg-2-2": "builder-bg-2", "BG-2-3": "builder-bg-3", "BUILDER-BG-2": "builder-bg-2",
	} {
		m, ok := s.resolve(name)
		if !ok || m.Role != want {
			t.Errorf("resolve(%q) = %q, %v; want %q", name, m.Role, ok, want)
		}
	}
	for _, name := range []string{"", "0", "4", "builder", "builder-bg-4", "x"} {
		if m, ok := s.resolve(name); ok {
			t.Errorf("resolve(%q) = %q", name, m.Role)
		}
	}
}

func TestRawString(t *testing.T) {
	for raw, want := range map[string]string{"": "", "null": "", `"bg-2-1"`: "bg-2-1", "2": "2", "2.5": "2.5", "true": "true"} {
		if got := rawString(json.RawMessage(raw)); got != want {
			t.Errorf("rawString(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestHandleRefusalsAndTargetMap(t *testing.T) {
	s, _ := newSet(t, 2, "sleep 30", time.Minute)
	for _, c := range []struct{ action, payload, status string }{
		{"spawn", `"x"`, "bad_request"},
		{"launch", ``, "bad_request"},
		{"kill", `{"target":"builder-bg-9"}`, "invalid_target"},
		{"kill", `{}`, "invalid_target"},
		{"kill", `{"target":"1"}`, "not_running"},
		{"spawn", `{"slot":7}`, "slot_unavailable"},
	} {
		r := as[proto.BgRefusal](t)(handle(t, s, c.action, c.payload))
		if r.OK || string(r.Status) != c.status || r.Error == "" {
			t.Errorf("%s %s = %+v; want status %s", c.action, c.payload, r, c.status)
		}
	}
	tm := as[proto.BgTargetMapResult](t)(handle(t, s, "target-map", ""))
	if !tm.OK || tm.OwnerPaneID != "2" || tm.MaxAgents != 2 || fmt.Sprint(tm.Aliases) != "[builder-bg-1 builder-bg-2]" || fmt.Sprint(tm.PaneIDs) != "[bg-2-1 bg-2-2]" {
		t.Errorf("target-map = %+v", tm)
	}
	if l := as[proto.BgListResult](t)(handle(t, s, "list", "null")); !l.OK || l.Agents == nil || len(l.Agents) != 0 {
		t.Errorf("list = %+v", l)
	}
	if k := as[proto.BgKillAllResult](t)(handle(t, s, "kill-all", "")); !k.OK || k.Killed == nil || len(k.Killed) != 0 {
		t.Errorf("kill-all = %+v", k)
	}
}

func TestSpawnListKill(t *testing.T) {
	s, host := newSet(t, 2, "sleep 30", time.Minute)
	sp := as[proto.BgSpawnResult](t)(handle(t, s, "spawn", `{"task":"write the parser"}`))
	if want := (proto.BgSpawnResult{OK: true, Alias: "builder-bg-1", PaneID: "bg-2-1", OwnerPaneID: "2", Status: "starting"}); sp != want {
		t.Fatalf("spawn = %+v", sp)
	}
	if !host.hosted("builder-bg-1") || !s.Running("builder-bg-1") || s.Running("builder-bg-2") {
		t.Fatal("spawned slot is not hosted and running")
	}
	if p, ok := s.Lookup("bg-2-1"); !ok || p.Spec().Role != "builder-bg-1" {
		t.Fatalf("Lookup(bg-2-1) = %v, %v", p, ok)
	}
	if !host.told("builder-bg-1", "builder-bg-1") || !host.told("builder-bg-1", "TASK: write the parser") {
		t.Fatalf("slot got no brief and task: %+v", host.sent)
	}
	if sp := as[proto.BgSpawnResult](t)(handle(t, s, "spawn", `{"alias":"builder-bg-2","command":"sleep 29"}`)); sp.Alias != "builder-bg-2" {
		t.Fatalf("spawn 2 = %+v", sp)
	}
	if r, ok := handle(t, s, "spawn", ``); ok || refusalStatus(r) != "capacity_reached" {
		t.Fatalf("spawn 3 = %+v, %v", r, ok)
	}
	if r, ok := handle(t, s, "spawn", `{"slot":"2"}`); ok || refusalStatus(r) != "slot_unavailable" {
		t.Fatalf("spawn busy = %+v, %v", r, ok)
	}
	agents := as[proto.BgListResult](t)(handle(t, s, "list", "")).Agents
	if len(agents) != 2 || agents[0].Alias != "builder-bg-1" || agents[1].Command != "sleep 29" || agents[1].OwnerPaneID != "2" ||
		agents[0].PID == 0 || agents[0].CreatedAtMs == 0 {
		t.Fatalf("list = %+v", agents)
	}
	if k := as[proto.BgKillResult](t)(handle(t, s, "kill", `{"target":"bg-2-2"}`)); k != (proto.BgKillResult{OK: true, Alias: "builder-bg-2", PaneID: "bg-2-2", Reason: EndKilled}) {
		t.Fatalf("kill = %+v", k)
	}
	if host.hosted("builder-bg-2") || s.Running("builder-bg-2") || !host.told("builder", "builder-bg-2 ended: killed") {
		t.Fatal("killed slot still hosted, or owner not told")
	}
	if k := as[proto.BgKillAllResult](t)(handle(t, s, "kill-all", "")); fmt.Sprint(k.Killed) != "[builder-bg-1]" {
		t.Fatalf("kill-all = %+v", k)
	}
	host.mu.Lock()
	revoked := fmt.Sprint(host.revoked)
	host.mu.Unlock()
	if revoked != "[builder-bg-2 builder-bg-1]" {
		t.Fatalf("revoked tokens = %s", revoked)
	}
}

// TestSlotEndsBeforeSpawnHasPane: a background agent that prints the
// done marker, or exits, before Spawn has its pane (StartPane returns late)
// still ends its slot and the owner is told. Before the fix the end was
// dropped (the slot had no pane yet) and the slot ran on.
func TestSlotEndsBeforeSpawnHasPane(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, command, reason string
	}{
		{"done marker", "echo " + DoneMarker + "; sleep 30", EndTaskCompleted},
		{"exit", "exit 0", EndExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, host := newSet(t, 1, tc.command, time.Minute)
			host.startDelay = 500 * time.Millisecond
			if r, ok := handle(t, s, "spawn", ""); !ok {
				t.Fatalf("spawn = %v", r)
			}
			poll.For(t, 15*time.Second, func() error {
				return poll.Want(host.told("builder", "builder-bg-1 ended: "+tc.reason) && !s.Running("builder-bg-1") && !host.hosted("builder-bg-1"),
					"owner told %s, slot ended", tc.reason)
			})
		})
	}
}

// TestLateCallbackSparesTheNextRun: a killed slot's exit callback that
// runs late (its goroutine waited on a loaded machine) after the slot was
// spawned again does not end the new run. Before the fix it did, with
// reason exited: TestBackgroundSlots under make test-loaded got
// not_running for a kill of the slot it had just spawned.
func TestLateCallbackSparesTheNextRun(t *testing.T) {
	t.Parallel()
	s, host := newSet(t, 1, "sleep 30", time.Minute)
	for range 2 {
		if r, ok := handle(t, s, "spawn", `{"slot":"1"}`); !ok {
			t.Fatalf("spawn = %v", r)
		}
		if r, ok := handle(t, s, "kill", `{"target":"1"}`); !ok {
			t.Fatalf("kill = %v", r)
		}
	}
	if r, ok := handle(t, s, "spawn", `{"slot":"1"}`); !ok {
		t.Fatalf("spawn = %v", r)
	}
	host.mu.Lock()
	first := host.specs[0]
	host.mu.Unlock()
	first.OnExit(0, nil)               // the first run's, late
	first.OnLine(DoneMarker)           // and its done line
	time.Sleep(300 * time.Millisecond) // an end would have run by now
	if !s.Running("builder-bg-1") || host.told("builder", "builder-bg-1 ended: "+EndExited) {
		t.Fatal("a late callback of an earlier run ended the slot's new run")
	}
	if k := as[proto.BgKillResult](t)(handle(t, s, "kill", `{"target":"builder-bg-1"}`)); !k.OK {
		t.Fatalf("kill = %+v", k)
	}
}

func TestDoneMarkerEndsSlot(t *testing.T) {
	s, host := newSet(t, 1, "echo "+DoneMarker+"; sleep 30", time.Minute)
	if r, ok := handle(t, s, "spawn", ""); !ok {
		t.Fatalf("spawn = %v", r)
	}
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(host.told("builder", "builder-bg-1 ended: "+EndTaskCompleted), "owner told task_completed")
	})
	if s.Running("builder-bg-1") || host.hosted("builder-bg-1") {
		t.Fatal("completed slot still running")
	}
}

func TestIdleTTLAndOwnerExit(t *testing.T) {
	s, host := newSet(t, 2, "sleep 30", 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if r, ok := handle(t, s, "spawn", ""); !ok {
		t.Fatalf("spawn = %v", r)
	}
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(host.told("builder", "builder-bg-1 ended: "+EndIdleTTL), "owner told idle_ttl_expired")
	})
	cancel()
	<-done

	handle(t, s, "spawn", "")
	handle(t, s, "spawn", "")
	s.OwnerExited()
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(!s.Running("builder-bg-1") && !s.Running("builder-bg-2"), "slots end with their owner")
	})
	if host.told("builder", EndOwnerExited) {
		t.Error("the exited owner was told")
	}
}

func TestStopEndsSlots(t *testing.T) {
	s, host := newSet(t, 1, "sleep 30", time.Minute)
	handle(t, s, "spawn", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Stop(ctx)
	if s.Running("builder-bg-1") || host.hosted("builder-bg-1") || !host.told("builder", "builder-bg-1 ended: "+EndHubStopped) {
		t.Fatal("slot survived Stop, or the owner was not told")
	}
	// The slot's brief and its end speak of this session: they expire with
	// it rather than being typed into the next one (broker.Submission.
	// SessionScoped).
	for _, sub := range host.sentTo("builder", "builder-bg-1") {
		if sub.From == "system" && !sub.SessionScoped {
			t.Errorf("lifecycle notice %q to %s is not session-scoped", sub.Content, sub.Target)
		}
	}
	if r, ok := handle(t, s, "spawn", ""); ok || refusalStatus(r) != "slot_unavailable" {
		t.Fatalf("spawn after Stop = %v, %v", r, ok)
	}
}

// TestIdleTTLAfterSleep: Run waits with no timer while no slot runs (#36)
// and a spawn wakes it, also after it went back to sleep: each of two
// slots spawned one after the other expires.
func TestIdleTTLAfterSleep(t *testing.T) {
	s, host := newSet(t, 1, "sleep 30", 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for round := 1; round <= 2; round++ {
		if r, ok := handle(t, s, "spawn", ""); !ok {
			t.Fatalf("spawn %d = %v", round, r)
		}
		// The slot stops running a moment before its owner is told: both
		// are waited for.
		poll.For(t, 15*time.Second, func() error {
			return poll.Want(!s.Running("builder-bg-1") && !s.anyRunning() && host.told("builder", "builder-bg-1 ended: "+EndIdleTTL),
				"slot of round %d expired and its owner told idle_ttl_expired", round)
		})
	}
}
