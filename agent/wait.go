package agent

import (
	"context"
	"errors"
	"time"
)

// The waits of a delivery: for a running program, for a ready screen, and
// pauses that end early when the program ends or the pane stops.

// endReason tells why a run can no longer take input.
func (p *Pane) endReason(pr *proc) error {
	select {
	case <-p.stopCh:
		return ErrStopped
	default:
	}
	if pr.isExited() {
		return ErrPaneExited
	}
	return nil
}

// pause waits d unless the run ends or the pane stops first (false). The
// time waited is added to *acc when acc is not nil.
func (p *Pane) pause(pr *proc, d time.Duration, acc *time.Duration) bool {
	return p.pauseOutput(pr, d, nil, nil, acc) // a nil channel never fires
}

// addSince adds the time since t0 to *acc.
func addSince(acc *time.Duration, t0 time.Time) { *acc += time.Since(t0) }

// waitRunning waits for a running program that has written its first output
// (or stayed silent for StartupWait); nil when the pane stops. Blocked time
// is added to *acc.
func (p *Pane) waitRunning(acc *time.Duration) *proc {
	for {
		p.mu.Lock()
		pr, changed, out, saw := p.proc, p.procChanged, p.outChanged, p.sawOutput
		p.mu.Unlock()
		if pr != nil && !pr.isExited() {
			left := p.spec.StartupWait - time.Since(pr.startedAt)
			if saw || left <= 0 {
				return pr
			}
			t0 := time.Now()
			t := time.NewTimer(left)
			select {
			case <-t.C:
			case <-out:
			case <-changed:
			case <-pr.exited:
			case <-p.stopCh:
				t.Stop()
				return nil
			}
			t.Stop()
			addSince(acc, t0)
			continue
		}
		t0 := time.Now()
		select {
		case <-changed:
		case <-p.stopCh:
			return nil
		}
		addSince(acc, t0)
	}
}

// readinessRecheck bounds a wait for the screen to change while it is not
// ready (busy, blocked or without a prompt).
const readinessRecheck = time.Second

// waitReady waits until the run is ready for it, judged from its screen
// (SPEC §6 step 1): the profile's markers classify the screen
// (Profile.Classify) and a Ready screen must also have stood still (no
// output, so neither text nor cursor moved) for the profile's quiet period.
// A profile with RawInput is not ready while the terminal is still
// canonical (the program is not reading its prompt yet).
//
// An urgent message needs no quiet period. It is typed at the next ready
// screen; where the profile defines an Interrupt, a Busy screen is first
// interrupted (at most maxInterrupts times, again only after the screen
// stopped being busy) and the message follows once the screen is ready and
// quiet. Like every message it never goes to a Blocked screen (a dialog for
// a person) nor, for a profile with ready markers, to a screen without a
// prompt, nor while a CLI hook's report that the agent waits for a person
// holds (ReportHookState): a pane in StateWaitingForHuman gets nothing typed.
// An urgent message for it waits at the head of the queue, where the first
// hook of the agent's next step (once the person answered) claims it, or it
// is typed once the pane is ready again. Before a non-zero deadline an urgent message waits as others do
// (a fresh program settling).
//
// People come first, before all of that and for urgent messages too: while
// a person in attach typed within Spec.PersonQuiet or left a line half
// typed (see personHold), nothing is typed, and Status.Waiting says so.
//
// It returns false when the run ends, the pane stops, or an urgent message
// took its place at the head of the queue first.
func (p *Pane) waitReady(pr *proc, it *item, deadline time.Time) bool {
	if !p.awaitReady(pr, it, deadline) {
		return false
	}
	p.mu.Lock()
	if p.proc == pr {
		p.readyRun = pr // past starting (Status.State)
	}
	p.mu.Unlock()
	return true
}

// awaitReady is waitReady's loop. Whether the run is ready is the one
// judgment Status shows too (Pane.judge); what is the typing engine's own
// is people first, and an urgent message's way with a busy program.
func (p *Pane) awaitReady(pr *proc, it *item, deadline time.Time) bool {
	urgent, acc := it.d.Urgent, &it.waited
	interrupts, armed := 0, true
	defer p.setWaiting("")
	for {
		p.mu.Lock()
		cur, out := p.proc, p.outChanged
		p.mu.Unlock()
		if cur != pr {
			return false
		}
		gone, jump := p.overtaken(it)
		if gone {
			return false
		}
		if hold, recheck, keys := p.personHold(pr); hold {
			p.setWaiting(WaitingForPerson)
			if !p.pauseOutput(pr, recheck, keys, jump, acc) {
				return false
			}
			continue
		}
		p.setWaiting("")
		now := time.Now()
		asUrgent := urgent && (deadline.IsZero() || !now.Before(deadline))
		v := p.judge(pr)
		if v.screen != Busy {
			armed = true
		}
		wait := v.recheck
		if v.marker == markerHookTurn && p.heldWatch() {
			// The turn hm's own Enter began, with no hook since: that
			// Enter may have been lost (a CLI resuming its session drew
			// the text back into its input), and the turn would hold the
			// pane for hookTurnQuiet. The held watch looks at the input.
			p.watchHeld()
		}
		switch {
		case asUrgent && v.screen == Ready && (interrupts == 0 || v.quiet >= p.profile.Idle):
			return true
		case asUrgent && v.screen == Busy && p.profile.Interrupt != "" && armed && interrupts < maxInterrupts:
			if left := p.interruptGapLeft(); left > 0 {
				wait = left // a second Esc now would be a double Esc
				break
			}
			sent, ok := p.interrupt(pr, it)
			if !ok {
				return false
			}
			if sent {
				interrupts++
				armed = false
			}
			wait = readinessRecheck
		case v.state == StateReady && v.cooked:
			p.log.Warn("terminal still canonical on a quiet screen; typing anyway (check the profile's rawInput)", "profile", p.profile.Name, "quiet", v.quiet.Round(time.Second))
			return true
		case v.state == StateReady && v.unmarked:
			// See Profile.Unmarked: a screen that has stood still this
			// long with no prompt marker, no busy marker and no dialog
			// is taken as ready rather than holding the queue forever.
			p.noteDrift(pr, v)
			return true
		case v.state == StateReady:
			return true
		case v.screen == Blocked:
			p.setWaiting(WaitingForHuman)
			p.log.Debug("waiting for a person", "marker", v.marker)
		default:
			p.log.Debug("waiting for the pane to be ready", "screen", v.screen.String(), "marker", v.marker)
		}
		if urgent && !deadline.IsZero() && now.Before(deadline) {
			wait = min(wait, deadline.Sub(now))
		}
		if !p.pauseOutput(pr, wait, out, jump, acc) {
			return false
		}
	}
}

// maxInterrupts bounds how often one urgent message interrupts a busy
// program; canonicalRecheck is how often a Ready screen over a canonical
// terminal is looked at again; interruptGap is the least time between two
// interrupts of one pane: Claude Code, Codex and Gemini CLI take two Escs
// in quick succession as a command of its own (Gemini opens its rewind
// dialog), so a program busy again just after an interrupt waits for it.
const (
	maxInterrupts    = 3
	canonicalRecheck = 50 * time.Millisecond
	interruptGap     = 2 * time.Second
)

// interruptGapLeft is how long the pane must still wait before it may be
// interrupted again (0: now).
func (p *Pane) interruptGapLeft() time.Duration {
	p.qmu.Lock()
	last := p.lastInterrupt
	p.qmu.Unlock()
	if last.IsZero() {
		return 0
	}
	return max(0, interruptGap-time.Since(last))
}

// interrupt types the profile's Interrupt into a busy program for the
// urgent message it: sent tells whether it was typed, ok is false when the
// run ended or the pane stopped. It obeys people first as all of hm's
// typing does: when a person's key came in meanwhile, nothing is typed and
// the wait goes on.
func (p *Pane) interrupt(pr *proc, it *item) (sent, ok bool) {
	p.inputMu.Lock()
	_, err := p.writeTo(context.Background(), pr, []byte(p.profile.Interrupt))
	if err == nil && p.lastEntered.pr == pr {
		p.lastEntered.interrupted = true
	}
	p.inputMu.Unlock()
	switch {
	case err == nil:
		p.qmu.Lock()
		p.interrupting, p.lastInterrupt = it, time.Now()
		p.qmu.Unlock()
		p.mu.Lock()
		p.endTurnLocked("hm interrupted it") // a cancelled turn may run no stop hook
		p.mu.Unlock()
		it.interrupted, it.cleared = true, false
		p.log.Info("interrupted the busy program for an urgent message", "id", it.d.MessageID, "profile", p.profile.Name)
		p.report(it, Stage{Kind: StageInterrupted})
		return true, true
	case errors.Is(err, errPersonFirst):
		return false, true
	default:
		return false, p.endReason(pr) == nil
	}
}

// pauseOutput is pause that also ends early (true) when out is closed (new
// output, or a person's key) or jump is (an urgent message jumped the
// queue).
func (p *Pane) pauseOutput(pr *proc, d time.Duration, out, jump <-chan struct{}, acc *time.Duration) bool {
	if acc != nil {
		defer addSince(acc, time.Now())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-out:
		return true
	case <-jump:
		return true
	case <-pr.exited:
		return false
	case <-p.stopCh:
		return false
	}
}

// waitOutput waits up to Verify for output after out was taken (ok), or
// for the run to end or the pane to stop (ended).
func (p *Pane) waitOutput(pr *proc, out <-chan struct{}) (ok, ended bool) {
	t := time.NewTimer(p.profile.Verify)
	defer t.Stop()
	select {
	case <-out:
		return true, false
	case <-t.C:
		return false, false
	case <-pr.exited:
		return false, true
	case <-p.stopCh:
		return false, true
	}
}
