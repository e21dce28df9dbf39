package agent

import (
	"fmt"
	"time"
)

// State is a pane's liveness, reported in Status.State (docs/protocol.md
// § "Liveness").
type State string

// Pane states.
const (
	// StateStarting: the program was started and has not yet shown a
	// ready screen (nor has a hook said otherwise).
	StateStarting State = "starting"
	// StateReady: the program shows its prompt and has stood still for the
	// profile's quiet period, or its Stop hook said its turn ended.
	StateReady State = "ready"
	// StateBusy: the program works: a busy marker is on the screen, it
	// wrote output within the profile's quiet period, or a hook said a
	// prompt was submitted or a tool ran.
	StateBusy State = "busy"
	// StateWaitingForHuman: a dialog only a person may answer is on the
	// screen (the profile's blocked markers), or a Notification hook said
	// the agent asks for a person's permission. Nothing is typed into
	// such a pane, [URGENT] included (see Pane.waitReady).
	StateWaitingForHuman State = "waiting_for_human"
	// StateExited: no program runs (ended, failed to start, or waiting to
	// restart).
	StateExited State = "exited"
)

// WaitingForHuman is Status.Waiting while the delivery engine holds a
// message back because the agent waits for a person (StateWaitingForHuman).
const WaitingForHuman = "held while the agent waits for a person"

// ParseHookState reads a state a CLI hook may report: ready, busy or
// waiting_for_human (the others are the pane's own to tell).
func ParseHookState(s string) (State, error) {
	switch st := State(s); st {
	case StateReady, StateBusy, StateWaitingForHuman:
		return st, nil
	}
	return "", fmt.Errorf("hook state %q: want ready, busy or waiting_for_human", s)
}

// hookReport is the state a CLI hook reported for the pane's program. It
// holds for that run while the screen reads as it did when the report came
// (screen): the screen changing class (a dialog answered, a spinner that
// starts or stops) contradicts it for good and the screen is believed
// again; a newer report replaces it; a new run forgets it.
type hookReport struct {
	state  State
	screen Readiness
	run    *proc
	at     time.Time
}

// ReportHookState records the state a CLI hook of the pane's program
// reported (`hm hook`, docs/protocol.md §14): Stop/AfterAgent ready,
// UserPromptSubmit/BeforeAgent/PostToolUse/AfterTool busy, a permission
// Notification waiting_for_human. It is ignored while no program runs.
func (p *Pane) ReportHookState(s State) {
	screen, _ := p.profile.Classify(p.Screen())
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.proc
	if pr == nil || pr.isExited() {
		return
	}
	p.hook = hookReport{state: s, screen: screen, run: pr, at: time.Now()}
	p.hookHeld.Store(true)
	if s == StateReady {
		p.readyRun = pr
	}
	p.log.Debug("hook reported the pane's state", "state", string(s), "screen", screen.String())
}

// contradictHookLocked drops the hook's report once run pr's screen reads
// as class, another class than when the report came (handleOutput looks at
// every output while a report holds, so a screen that changed and changed
// back does not bring an old report back). p.mu is held.
func (p *Pane) contradictHookLocked(pr *proc, class Readiness) {
	if p.hook.run == pr && p.hook.screen == class {
		return
	}
	p.hook = hookReport{}
	p.hookHeld.Store(false)
}

// hookStateLocked is the hook-reported state that still holds for run pr
// on a screen classified screen, or "". p.mu is held.
func (p *Pane) hookStateLocked(pr *proc, screen Readiness) State {
	if p.hook.state == "" {
		return ""
	}
	p.contradictHookLocked(pr, screen)
	return p.hook.state
}

// hookWaitingForHuman tells whether a hook said run pr waits for a person
// and the screen (classified screen) has not contradicted it since.
func (p *Pane) hookWaitingForHuman(pr *proc, screen Readiness) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hookStateLocked(pr, screen) == StateWaitingForHuman
}

// livenessLocked derives the state of the running program pr from its
// screen (classified screen) and the hooks, p.mu held:
//   - a hook's report, while it holds (hookReport);
//   - a Blocked screen: waiting_for_human; a Busy screen: busy;
//   - a Ready screen (or, past the profile's Unmarked wait, one without a
//     marker, which a delivery would type into too): busy while output
//     came within the quiet period, else ready; until the run was first
//     seen ready it is starting rather than busy.
func (p *Pane) livenessLocked(pr *proc, screen Readiness, now time.Time) State {
	if s := p.hookStateLocked(pr, screen); s != "" {
		return s
	}
	seen := p.readyRun == pr
	quiet := now.Sub(p.lastOutput)
	if !p.sawOutput {
		quiet = now.Sub(pr.startedAt)
	}
	switch screen {
	case Blocked:
		return StateWaitingForHuman
	case Busy:
		if !p.sawOutput {
			return StateStarting
		}
		return StateBusy
	case Ready:
		if !p.sawOutput && quiet < p.spec.StartupWait {
			return StateStarting
		}
	default: // ReadyUnknown
		if !seen && quiet < p.profile.unmarked() {
			return StateStarting
		}
	}
	switch {
	case quiet >= p.profile.Idle:
		p.readyRun = pr
		return StateReady
	case seen:
		return StateBusy
	}
	return StateStarting
}
