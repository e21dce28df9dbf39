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

// hookReport is a ready or waiting_for_human state a CLI hook reported
// for the pane's program. It holds for that run while the screen reads as
// it did when the report came (screen): the screen changing class (a
// dialog answered, a spinner that starts or stops) contradicts it for good
// and the screen is believed again; a newer report replaces it; a new run
// forgets it.
type hookReport struct {
	state  State
	screen Readiness
	run    *proc
	at     time.Time
}

// hookTurn is a turn a CLI hook said runs (a prompt submitted, a tool
// call ended, a stop hm blocked with messages): the pane is busy whatever
// its screen shows until a hook says the turn ended (ready), hm or a
// person interrupts it (a CLI may run no stop hook for a cancelled turn),
// the run ends, or the screen, not busy, stood still for hookTurnQuiet (a
// turn-end hook that never reached the hub). CLIs animate their work, so
// a screen that still for that long is not working.
type hookTurn struct {
	run *proc
	at  time.Time
}

// hookTurnQuiet is how long a screen that shows no busy marker must stand
// still before a turn a hook reported is taken as over without its hook.
const hookTurnQuiet = time.Minute

// ReportHookState records the state a CLI hook of the pane's program
// reported (`hm hook`, docs/protocol.md §14): Stop/AfterAgent ready,
// UserPromptSubmit/BeforeAgent/PostToolUse/AfterTool busy (a turn runs),
// a permission Notification waiting_for_human. It is ignored while no
// program runs.
func (p *Pane) ReportHookState(s State) {
	screen, _ := p.profile.Classify(p.Screen())
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.proc
	if pr == nil || pr.isExited() {
		return
	}
	p.hooked = true
	switch s {
	case StateBusy:
		p.turn = hookTurn{run: pr, at: time.Now()}
		p.turnHookAt = p.turn.at
		p.hook = hookReport{}
		p.hookHeld.Store(false)
	case StateReady:
		p.turn = hookTurn{}
		p.readyRun = pr
		fallthrough
	default:
		p.hook = hookReport{state: s, screen: screen, run: pr, at: time.Now()}
		p.hookHeld.Store(true)
	}
	p.log.Debug("hook reported the pane's state", "state", string(s), "screen", screen.String())
}

// startEnteredTurn records that hm is about to press Enter for a prompt in
// run pr. In a pane whose program reports through hooks, that starts a
// turn: the pane is busy until the turn-end hook (or what else ends a
// turn, see hookTurn), so the next message is not typed while the CLI
// still holds this one. Gemini CLI queues the prompts submitted while it
// initializes or works and sends them to the model joined as one; its
// prompt-submit hook fires only then. It reports whether it started one.
func (p *Pane) startEnteredTurn(pr *proc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hooked {
		return false
	}
	p.turn = hookTurn{run: pr, at: time.Now()}
	p.hook = hookReport{} // an earlier turn's end no longer holds
	p.hookHeld.Store(false)
	return true
}

// endTurnLocked forgets the turn a hook reported, why being what ended it
// (an interrupt); p.mu is held.
func (p *Pane) endTurnLocked(why string) {
	if p.turn.run != nil {
		p.log.Debug("the turn a hook reported is taken as over", "why", why)
	}
	p.turn = hookTurn{}
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

// turnRunsLocked reports whether a turn a hook reported still runs in pr,
// on a screen of class screen that stood still for quiet. p.mu is held.
func (p *Pane) turnRunsLocked(pr *proc, screen Readiness, quiet time.Duration) bool {
	switch {
	case p.turn.run == nil:
		return false
	case p.turn.run != pr:
		p.turn = hookTurn{}
		return false
	case screen != Busy && quiet >= hookTurnQuiet && time.Since(p.turn.at) >= hookTurnQuiet:
		p.log.Warn("a hook said a turn runs, but the screen stood still without a busy marker: taken as over (no turn-end hook came)", "quiet", quiet.Round(time.Second))
		p.turn = hookTurn{}
		return false
	}
	return true
}

// verdict is a pane run's readiness at one moment, judged in one place
// (Pane.judgeLocked) for the typing engine (waitReady) and for Status.
type verdict struct {
	// state is what Status shows; StateReady is when a message is typed.
	state State
	// screen is the class the judgment stands on: the screen's by the
	// profile's markers, except Blocked for a hook's waiting_for_human,
	// Busy while a hook's turn runs, ReadyUnknown for a Ready screen over
	// a terminal still canonical (cooked). marker is what decided.
	screen Readiness
	marker string
	// quiet is how long the run has written nothing.
	quiet time.Duration
	// cooked: a Ready screen over a terminal still canonical.
	cooked bool
	// unmarked: ready only because a screen no marker matched stood still
	// for the profile's Unmarked wait (profile drift, see Pane.drift).
	unmarked bool
	// recheck, when not ready, bounds the wait before judging again (new
	// output ends it sooner).
	recheck time.Duration
}

// Markers a verdict names for what hooks decided.
const (
	markerHookWaiting = "hook: waiting for a human"
	markerHookTurn    = "hook: a turn runs"
	markerUnread      = "typed input the program has not read"
	markerQueued      = "the program queued the last prompt and has not taken it up"
)

// judge is the readiness of run pr now (see judgeLocked).
func (p *Pane) judge(pr *proc) verdict {
	s := p.Screen()
	screen, marker := p.profile.Classify(s)
	queued := p.profile.queuedLines(s)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteQueuedLocked(pr, screen, queued, now)
	return p.judgeLocked(pr, screen, marker, now)
}

// judgeLocked decides whether run pr, whose screen classifies as screen
// (by marker), is ready for a message, p.mu held. In order:
//   - a hook's waiting_for_human (while it holds), a Blocked screen:
//     waiting_for_human;
//   - a hook's ready (while it holds): ready; on a screen that still
//     shows a busy marker, once it stood still for the quiet period;
//   - a turn a hook reported and that has not ended: busy, whatever the
//     screen shows;
//   - a Busy screen: busy;
//   - a Ready screen (not over a canonical terminal when the profile has
//     RawInput): ready once quiet for the quiet period (a fresh run that
//     wrote nothing: after StartupWait);
//   - a screen no marker matches: ready once it stood still for the
//     profile's Unmarked wait (unmarked: the profile's markers may have
//     drifted from the CLI's screen).
//
// What is not ready is busy (a Busy screen once the run wrote something,
// any other once it was seen ready), else starting.
func (p *Pane) judgeLocked(pr *proc, screen Readiness, marker string, now time.Time) verdict {
	v := verdict{screen: screen, marker: marker, quiet: now.Sub(p.lastOutput)}
	if !p.sawOutput {
		v.quiet = now.Sub(pr.startedAt)
	}
	if screen == Ready && p.profile.RawInput && pr.canonical() {
		v.screen, v.cooked = ReadyUnknown, true
	}
	hook := p.hookStateLocked(pr, screen)
	switch {
	case hook == StateWaitingForHuman:
		v.screen, v.marker = Blocked, markerHookWaiting
		fallthrough
	case v.screen == Blocked:
		v.state, v.recheck = StateWaitingForHuman, readinessRecheck
		return v
	case hook == StateReady && v.screen != Busy:
		v.state = StateReady
	case hook == StateReady:
		p.quietLocked(&v, p.profile.Idle, readinessRecheck)
	case p.turnRunsLocked(pr, screen, v.quiet):
		v.screen, v.marker = Busy, markerHookTurn
		v.recheck = readinessRecheck
	case p.queuedHoldsLocked(pr, now):
		// Not Busy: an urgent message does not interrupt a program that
		// has not taken its queue up yet.
		v.screen, v.marker = ReadyUnknown, markerQueued
		v.recheck = readinessRecheck
	case v.screen == Busy:
		v.recheck = readinessRecheck
	case v.screen == Ready && !p.sawOutput:
		p.quietLocked(&v, max(p.profile.Idle, p.spec.StartupWait), readinessRecheck)
	case v.screen == Ready:
		p.quietLocked(&v, p.profile.Idle, readinessRecheck)
	case v.cooked:
		p.quietLocked(&v, p.profile.unmarked(), canonicalRecheck)
	default:
		p.quietLocked(&v, p.unmarkedWaitLocked(pr), readinessRecheck)
		v.unmarked = v.state == StateReady
	}
	if v.state == StateReady && pr.unread() > 0 {
		// Typed bytes wait in the terminal for a program that is not
		// reading (unread.go): busy, whatever the screen shows.
		v.state, v.marker, v.recheck = "", markerUnread, drainPoll
	}
	if v.state == StateReady {
		p.readyRun = pr
		if v.screen == Ready && v.marker != "" && hook == "" {
			p.clearDriftLocked()
		}
		return v
	}
	switch {
	case v.marker == markerHookTurn, v.marker == markerUnread, v.marker == markerQueued, v.screen == Busy && p.sawOutput, v.screen != Busy && p.readyRun == pr:
		v.state = StateBusy
	default:
		v.state = StateStarting
	}
	return v
}

// unmarkedWaitLocked is how long run pr's screen, matching none of the
// profile's markers, must stand still to be taken as ready: the profile's
// Unmarked wait, four times that for a run never yet seen ready. A CLI
// still starting shows no prompt while it loads, and on a loaded machine
// Gemini CLI stood still for more than 15 s between its banner and its
// input box: typed into then, it merged the session line with the next
// message. p.mu is held.
func (p *Pane) unmarkedWaitLocked(pr *proc) time.Duration {
	if p.readyRun != pr && !pr.adopted { // an adopted program is past its start
		return startUnmarkedFactor * p.profile.unmarked()
	}
	return p.profile.unmarked()
}

// startUnmarkedFactor multiplies the unmarked wait of a run never seen
// ready (unmarkedWaitLocked).
const startUnmarkedFactor = 4

// quietLocked makes v ready once the run stood still for need; else it
// sets when to look again (at most every most).
func (p *Pane) quietLocked(v *verdict, need, most time.Duration) {
	if v.quiet >= need {
		v.state = StateReady
		return
	}
	v.recheck = min(most, need-v.quiet)
}
