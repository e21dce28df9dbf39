package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"hm/internal/ground/atomicfile"
	"hm/internal/ground/paneevents"
	"hm/internal/ground/status"
)

// StageKind names a step of a delivery.
type StageKind int

// Delivery stages, reported in this order (Submitted or Unverified follow
// Typed; Failed replaces them). When the program ends while the message is
// typed, before its Enter, Retyping says so and the message is typed again,
// whole, into the next run (Typed then repeats if it had been reached).
const (
	// StageTyped: the whole text was written into the pane; Delivery.Typed
	// is called just before Enter.
	StageTyped StageKind = iota + 1
	// StageSubmitted: the program produced output after Enter.
	StageSubmitted
	// StageUnverified: no output after Enter, even after a second Enter,
	// or the program ended or the pane stopped before output was seen.
	StageUnverified
	// StageFailed: the message could not be typed at all (Err says why);
	// Delivery.Failed is called with Err.
	StageFailed
	// StageStuck: repeated attempts did not get the message submitted: its
	// text never showed on the screen, or stayed at the input after Enter
	// (Err, wrapping ErrStuck, says which); Delivery.Stuck is called with
	// Err. The pane goes on with the next message.
	StageStuck
	// StageRetyping: the program ended while the message was being typed,
	// before its Enter (Err, wrapping ErrPaneExited, says when): nothing
	// was submitted, and the message is typed again, whole, into the next
	// run. Delivery.Retyping is called with Err.
	StageRetyping
	// StageInterrupted: the urgent message's pane was busy and its
	// profile's Interrupt keys were typed to stop the program's work
	// (once per busy spell, at most 3 times); the message follows once
	// the screen is ready. Delivery.Interrupted is called.
	StageInterrupted
	// StageCleared: after an interrupt, the program's input held text hm
	// did not type (a CLI puts the interrupted turn's prompt back); hm
	// erased it before typing the urgent message, so that it is not
	// submitted with it. Held is what the input showed. Delivery.Cleared
	// is called with it.
	StageCleared
)

// String returns the stage name.
func (k StageKind) String() string {
	switch k {
	case StageTyped:
		return string(status.Typed)
	case StageSubmitted:
		return string(status.Submitted)
	case StageUnverified:
		return "unverified"
	case StageFailed:
		return string(status.Failed)
	case StageStuck:
		return string(status.Stuck)
	case StageRetyping:
		return "retyping"
	case StageInterrupted:
		return string(status.EventInterrupted)
	case StageCleared:
		return string(status.EventCleared)
	}
	return fmt.Sprintf("StageKind(%d)", int(k))
}

// Stage reports progress of one delivery.
type Stage struct {
	Kind StageKind
	// At is when the stage was reached.
	At time.Time
	// CommitToFirstByte is the engine's own latency: from Enqueue to the
	// first byte written, minus the deliberate waits (messages ahead in the
	// queue, a restarting program, the readiness wait, earlier typings of
	// the message): readiness observed → first byte.
	CommitToFirstByte time.Duration
	// Pointer is the file holding the body when it was not typed inline.
	Pointer string
	// Err explains StageFailed and some StageUnverified reports.
	Err error
	// Held is what the input showed before StageCleared erased it.
	Held string
}

// Delivery is one message to type into a pane.
type Delivery struct {
	// MessageID is shown in the "[hm:<id>]" trailer and names the pointer file.
	MessageID string
	// Content is the message, role header included.
	Content string
	// Urgent jumps the queue, skips the quiet period and, where the
	// profile has an Interrupt, interrupts a busy program (see Enqueue and
	// waitReady). A content whose priority tags (after the role header)
	// include "[URGENT]" is urgent too (roles.Urgent).
	Urgent bool
	// Claimable lets another path take the message while its typing has
	// not begun (see Pane.Claim): a CLI hook that puts it in the agent's
	// context instead.
	Claimable bool
	// Report, if set, receives the stages in order, on a goroutine of the
	// pane; it must not block for long.
	Report func(Stage)
	// Callbacks are the message's events (paneevents.Callbacks), each
	// optional:
	//   - Typed, at StageTyped: on the delivery goroutine, once the whole
	//     text is in the pane (after StageTyped was reported), before the
	//     EnterDelay that precedes the first Enter, so a caller can durably
	//     record the message as typed. It is called once per typing (again
	//     when the program ended before Enter and the text is typed into
	//     the next run) and delays the Enter while it runs.
	//   - Submitted, on the delivery goroutine right after the first Enter
	//     is written, with proven false, and once more with proven true if
	//     the program is then seen to take it, before StageSubmitted is
	//     reported. A caller records the message as submitted at the first
	//     call. Across a kill -9 the pane's entered log (Spec.EnteredLog),
	//     written by the system call right after the Enter's, is what tells
	//     the next start that the old program took it (docs/protocol.md).
	//   - Failed, Stuck and Retyping, at StageFailed, StageStuck and
	//     StageRetyping with its Err; Interrupted at StageInterrupted;
	//     Cleared at StageCleared with what the input held: on the same
	//     goroutine as Report and after it.
	paneevents.Callbacks
}

// Fail reports StageFailed with err to d's Report and Failed callbacks, for a
// caller giving up on a delivery the pane will never type (see Undelivered).
// It runs the callbacks on the calling goroutine.
func (d Delivery) Fail(err error) {
	if d.Report != nil {
		d.Report(Stage{Kind: StageFailed, At: time.Now(), Err: err})
	}
	if d.Failed != nil {
		d.Failed(err)
	}
}

// deliver types one message. It returns false when the message must be tried
// again (its text was not fully written, or the pane is stopping). Its
// steps: wait for a running and ready program, compose the text (typing),
// type it and see it echoed (typeText), press Enter and see the program
// take it (enterText). Each step that types holds the input lock
// (typing.in), which passes from typeText to enterText without a gap, so
// that nothing is typed between a text and its Enter.
func (p *Pane) deliver(it *item) (done bool) {
	// CommitToFirstByte counts from readiness observed: the waits for a
	// running and ready program (their screen checks included) are
	// deliberate waiting, and so is all of a typing made again.
	w0, t0 := it.waited, time.Now()
	defer func() {
		if !done {
			it.waited = w0 + time.Since(t0)
		}
	}()
	pr := p.waitRunning(&it.waited)
	if pr == nil {
		return false
	}
	// Urgent messages skip the quiet period and a busy screen, except
	// while a fresh program is still settling (it may not have switched
	// bracketed paste on yet); never a dialog or a missing prompt.
	var quietUntil time.Time
	if it.d.Urgent {
		quietUntil = pr.startedAt.Add(p.spec.StartupWait)
	}
	if !p.waitReady(pr, it, quietUntil) || !p.startTyping(it) {
		return false
	}
	it.waited = w0 + time.Since(t0)
	t, ok := p.newTyping(pr, it)
	if !ok {
		return true
	}
	t.in.lock()
	defer t.in.unlock()
	if done, ok := p.typeText(t); !ok {
		return done
	}
	return p.enterText(t)
}

// inputLock is one typing's hold on Pane.inputMu: taken to type the text,
// kept through the first Enter, released while the screen is waited for.
// unlock releases it only when held, so every return can call it.
type inputLock struct {
	mu   *sync.Mutex
	held bool
}

func (l *inputLock) lock() {
	if !l.held {
		l.mu.Lock()
		l.held = true
	}
}

func (l *inputLock) unlock() {
	if l.held {
		l.held = false
		l.mu.Unlock()
	}
}

// typing is one typing of a message into run pr: its composed text and
// what the screen showed of it.
type typing struct {
	pr      *proc
	it      *item
	c       composition
	text    []byte
	trailer string
	in      inputLock
	// before is the input as it stood before the text was written; typed,
	// where the text stands once echoed (or after the last press).
	before, typed inputView
	// overhead is the engine's own latency to the first byte (Stage).
	overhead time.Duration
	// mode is the terminal's mode around the text's write: what an erase
	// must be written in to reach it (inputMode.erases).
	mode inputMode
}

// stage is a stage of t's message.
func (t *typing) stage(k StageKind, err error) Stage {
	s := Stage{Kind: k, CommitToFirstByte: t.overhead, Err: err}
	if t.c.Pointer {
		s.Pointer = t.it.pointer
	}
	return s
}

// newTyping composes the text of it for run pr, and writes its pointer
// file when the body does not go inline; false when that failed (reported
// failed: done).
func (p *Pane) newTyping(pr *proc, it *item) (*typing, bool) {
	p.mu.Lock()
	bracketed := p.bracketed
	p.mu.Unlock()
	// A program reading cooked lines gets at most canonLineMax bytes of
	// one from the kernel, which echoes the rest all the same.
	maxLine := 0
	if pr.canonical() {
		maxLine = canonLineMax
	}
	c := compose(composeOpts{
		ID:        it.d.MessageID,
		Content:   it.d.Content,
		Shell:     p.profile.Name == ProfileShell,
		Bracketed: bracketed,
		MultiLine: p.profile.MultiLine,
		Dir:       p.spec.Dir,
		MaxLine:   maxLine,
	}, p.pointerPath(it))
	if c.Pointer && it.pointer == "" {
		path, err := p.writePointer(it, c.Body)
		if err != nil {
			p.log.Error("message not delivered", "id", it.d.MessageID, "err", err)
			p.report(it, Stage{Kind: StageFailed, Err: err})
			return nil, false
		}
		it.pointer = path
	}
	t := &typing{pr: pr, it: it, c: c, text: []byte(c.Text), trailer: Trailer(it.d.MessageID)}
	t.in.mu = &p.inputMu
	return t, true
}

// typeText writes t's text under the input lock (held) and waits for it
// to show at the program's input, then for the Enter delay. ok is false
// when the delivery ends here (done as deliver returns it).
func (p *Pane) typeText(t *typing) (done, ok bool) {
	pr, it := t.pr, t.it
	if hold, _, _ := p.personHold(pr); hold {
		t.in.unlock()
		return false, false // a person's key came after waitReady: wait for them again
	}
	if !it.eraseDue.IsZero() {
		if done, ok := p.eraseMissed(pr, it, t.in.unlock, t.stage); !ok {
			return done, false
		}
	}
	if it.interrupted && !it.cleared {
		if done, ok := p.clearAfterInterrupt(pr, it, t.in.unlock); !ok {
			return done, false
		}
	}
	if p.enterHeld(pr) {
		t.in.unlock()
		return false, false // the earlier message went alone: wait for ready again
	}
	screen := p.Screen()
	t.before = viewInput(screen, p.profile, t.trailer)
	start := startOf(t.c.Text, screen)
	n, mode, err := p.writeNoting(context.Background(), pr, t.text)
	t.mode = mode
	// The first byte is in the terminal once the write returns.
	t.overhead = max(0, time.Since(it.enqueuedAt)-it.waited)
	if err != nil && n < len(t.text) {
		t.in.unlock()
		return p.typeAgain(pr, it, t.stage, fmt.Sprintf("while its text was written (%d of %d bytes)", n, len(t.text)), err), false
	}
	t.typed = t.before
	if t.trailer != "" {
		// Echo verification: the text must show at the program's input
		// before Enter may be pressed.
		// The text's start must show too, where it can (textHead): Enter
		// would otherwise submit a torn prompt.
		shown, ended := p.waitEchoed(pr, it, t.in.unlock, t.in.lock, func(s Screen) bool {
			var ok bool
			t.typed, ok = echoed(s, p.profile, t.trailer, t.before, start)
			return ok
		})
		if ended {
			t.in.unlock()
			return p.typeAgain(pr, it, t.stage, "before its text showed", nil), false
		}
		if !shown {
			return p.notShown(pr, it, t.mode, t.in.unlock, t.stage), false
		}
	}
	p.report(it, t.stage(StageTyped, nil))
	// The caller's record of the typing, made as soon as the text is on
	// the screen: the Enter follows EnterDelay later, so a kill aimed at
	// this record finds the message typed and not entered (typed again
	// after a restart), never between the Enter and its entered record.
	if it.d.Typed != nil {
		it.d.Typed()
	}
	// Enter is a separate write, EnterDelay after the text showed (none
	// where the terminal is canonical: see enterDelay). If the program
	// ends (or the pane stops) before Enter, the text was never submitted:
	// keep the message queued so it is typed again in full into the next
	// run (or, at shutdown, stays undelivered for the next session).
	if !p.pause(pr, p.profile.enterDelay(pr.canonical()), nil) {
		t.in.unlock()
		return p.typeAgain(pr, it, t.stage, "before Enter", nil), false
	}
	if p.typedOntoHeld(t) {
		p.separateFromHeld(t)
		return false, false // typed again, after the held message
	}
	return false, true
}

// enterText presses Enter for t's text (the input lock held for the first
// press) and waits for the program to take it, pressing again where the
// press left the text at the input, up to enterAttempts; text still there
// then is erased and the message reported stuck. It returns deliver's done.
func (p *Pane) enterText(t *typing) bool {
	pr, it := t.pr, t.it
	for attempt := 0; attempt < enterAttempts; attempt++ {
		if attempt > 0 && t.trailer != "" {
			// The press before this one left the text at the input,
			// perhaps with a newline under it: this press is judged
			// against the screen as it stands now, or its own newline
			// would look like a second row and the text leaving.
			t.typed = viewInput(p.Screen(), p.profile, t.trailer)
		}
		if done, ok := p.pressOnce(t, attempt); ok {
			return done
		}
		t.in.lock()
	}
	if t.trailer == "" {
		t.in.unlock()
		p.log.Warn("message typed but no reaction seen", "id", it.d.MessageID)
		p.report(it, t.stage(StageUnverified, nil))
		return true
	}
	left := p.eraseStuck(pr, t.before, t.trailer, utf8.RuneCount(t.text))
	p.lastEntered = enteredText{} // reported stuck: never entered again
	t.in.unlock()
	err := fmt.Errorf("%w: the text stayed at the input after %d presses of Enter; %s", ErrStuck, enterAttempts, left)
	p.log.Warn("message stuck", "id", it.d.MessageID, "err", err)
	p.report(it, t.stage(StageStuck, err))
	return true
}

// pressOnce presses Enter once for t (attempt 0 is the first press, which
// the entered log records) and judges it; the input lock is held on entry
// and released on return. ok is false when the text stayed at the input
// and Enter is to be pressed again; else done is deliver's.
func (p *Pane) pressOnce(t *typing, attempt int) (done, ok bool) {
	pr, it := t.pr, t.it
	// A screen already busy before this press (a spinner still up from
	// the last turn, a CLI still starting) proves nothing about it: only
	// the text leaving the input does then.
	busyBefore, _ := p.profile.Classify(p.Screen())
	p.mu.Lock()
	out := p.outChanged
	p.mu.Unlock()
	// The first Enter is recorded in the entered log with it (see
	// pressEnter), so that a hub killed now does not type the message
	// again into the next program.
	var id string
	if attempt == 0 {
		p.startEnteredTurn(pr)
		p.armQueued(pr)
		id = it.d.MessageID
	}
	if err := p.pressEnter(context.Background(), pr, id); err != nil {
		t.in.unlock()
		if attempt == 0 {
			// The first Enter never reached the program: not submitted.
			p.mu.Lock()
			p.endTurnLocked("its Enter was not written")
			p.mu.Unlock()
			return p.typeAgain(pr, it, t.stage, "before Enter (not written)", err), true
		}
		it.submitted(false)
		p.report(it, t.stage(StageUnverified, fmt.Errorf("press enter: %w", err)))
		return true, true
	}
	if attempt == 0 {
		// The Enter is in the terminal and the entered log: record it in
		// the caller's ledger too, before waiting to see the program take
		// it (the proof, if it comes, only raises the stage).
		it.submitted(false)
		p.noteEntered(pr, it, t.trailer, t.typed.pasted && !t.before.pasted)
	}
	t.in.unlock()
	var taken, ended, unread bool
	if t.trailer != "" {
		// Submitted means the text left the input area, not "some
		// output", and the program read it.
		taken, ended, unread = p.waitTaken(pr, patience(p.profile.Verify, 2*attempt), func(s Screen) bool {
			// A person's keys after hm's typing make the screen
			// unreadable as proof (their text on the next row looks like
			// a redrawn prompt): no claim then.
			return !p.personTypedAfterHM() && leftInput(t.typed, busyBefore == Busy, viewInput(s, p.profile, t.trailer), s, p.profile)
		})
	} else {
		taken, ended = p.waitOutput(pr, out)
	}
	switch {
	case taken:
		it.submitted(true)
		p.report(it, t.stage(StageSubmitted, nil))
		return true, true
	case ended && pr.exitUnread() > 0 && !p.personTypedAfterHM():
		// The program exited without reading the Enter (it still
		// waits in the terminal): not submitted, typed again whole.
		return p.typeAgain(pr, it, t.stage, "after Enter, which it never read", nil), true
	case ended:
		it.submitted(false)
		p.report(it, t.stage(StageUnverified, p.endReason(pr)))
		return true, true
	case unread:
		// Entered, and waiting in the terminal for a program that does
		// not read: not pressed again, not claimed taken.
		p.log.Warn("message entered but not read by the program", "id", it.d.MessageID, "waited", drainWait)
		p.report(it, t.stage(StageUnverified, fmt.Errorf("the program has not read its input in %s", drainWait)))
		return true, true
	}
	return false, false
}

// enterAttempts is how many times Enter is pressed for one typing before
// the message is reported stuck; typeAttempts is how many typings whose
// text never showed are made before it is (6: with patience's doubling
// the echo is waited for 0.3+0.6+1.2+2.4+2.4+2.4 s over them at a 300 ms
// echo wait, where a make test run on a machine loaded several times over
// saw a silently busy program's echo miss four windows in a row).
const (
	enterAttempts = 2
	typeAttempts  = 6
)

// patience is how long a check waits for the screen on its retry-th
// attempt: d doubled for each earlier attempt, up to 8 times d. A window
// missed because the machine was loaded (the program, or the terminal
// emulator behind the screen, did not run in time) is waited out the next
// time, so a slow machine makes a delivery slower, not stuck; the first
// attempt keeps the profile's window, which is what a program that threw
// the text away costs.
func patience(d time.Duration, retry int) time.Duration {
	return d << min(max(retry, 0), 3)
}

// eraseStuck clears the text of a message that stayed at the program's
// input after its presses of Enter, so that the next message is not typed
// onto it: the profile's erase keys first, then, if the text is still at
// the input (an input box whose Ctrl-U deletes one line, with the newlines
// the presses added under the text), a Backspace for every character typed
// and every press. It erases nothing after a person's keys, which stand at
// the input too. The caller holds inputMu. It returns what became of the
// text, for the stuck reason.
func (p *Pane) eraseStuck(pr *proc, before inputView, trailer string, typed int) string {
	if p.personTypedAfterHM() {
		return "left at the input: a person typed after it"
	}
	gone := func(s Screen) bool {
		v := viewInput(s, p.profile, trailer)
		return v.count <= before.count && (!v.pasted || before.pasted)
	}
	for i, keys := range []string{p.profile.erase(), strings.Repeat(backspace, typed+enterAttempts)} {
		if _, err := p.writeTo(context.Background(), pr, []byte(keys)); err != nil {
			return fmt.Sprintf("left at the input: erase: %v", err)
		}
		ok, ended := p.waitScreen(pr, patience(p.profile.echoWait(), 2), gone)
		switch {
		case ok && i == 0:
			return "erased from the input"
		case ok:
			return "erased from the input with Backspace"
		case ended:
			return "the program ended before it was erased"
		}
	}
	return "left at the input: neither the erase keys nor Backspace cleared it"
}

// backspace is what the Backspace key sends (DEL).
const backspace = "\x7f"

// notShown handles text that never appeared on the screen: the program was
// not listening. Whatever it may hold of the text (written in mode typed)
// is erased, and the message is typed again once the pane is ready
// (false), up to typeAttempts typings; then it is reported stuck (true),
// never dropped silently. An erase that may have missed the text (the
// kernel took it, while the program may hold the text: inputMode.erases)
// is pressed again before the message is typed again (eraseMissed). The
// caller holds inputMu; unlock releases it.
func (p *Pane) notShown(pr *proc, it *item, typed inputMode, unlock func(), stage func(StageKind, error) Stage) bool {
	_, mode, err := p.writeNoting(context.Background(), pr, []byte(p.profile.erase()))
	switch {
	case err != nil:
		p.log.Debug("erase after a typing that did not show", "id", it.d.MessageID, "err", err)
	case !mode.erases(typed):
		it.eraseDue = time.Now() // typeText calls eraseMissed before typing again
	}
	unlock()
	it.unseen++
	if it.unseen >= typeAttempts {
		err := fmt.Errorf("%w: the text never appeared on the screen in %d typings", ErrStuck, it.unseen)
		p.log.Warn("message stuck", "id", it.d.MessageID, "err", err)
		p.report(it, stage(StageStuck, err))
		return true
	}
	p.log.Info("typed text did not show; typing it again when the pane is ready", "id", it.d.MessageID, "typing", it.unseen)
	p.pause(pr, p.profile.Idle, &it.waited)
	return false
}

// submitted runs the delivery's Submitted callback, if any: once when the
// first Enter is written (unproven), and again only with proof.
func (it *item) submitted(proven bool) {
	if it.d.Submitted == nil || it.entered && !proven {
		return
	}
	it.entered = true
	it.d.Submitted(proven)
}

// report passes a stage to the delivery's Report callback, and StageFailed
// to its Failed callback.
func (p *Pane) report(it *item, s Stage) {
	s.At = time.Now()
	p.log.Debug("delivery stage", "id", it.d.MessageID, "stage", s.Kind.String(), "overhead", s.CommitToFirstByte, "err", s.Err)
	if fn := it.d.Report; fn != nil {
		p.disp.post(func() { fn(s) }, false)
	}
	if fn := it.d.Failed; fn != nil && s.Kind == StageFailed {
		p.disp.post(func() { fn(s.Err) }, false)
	}
	if fn := it.d.Stuck; fn != nil && s.Kind == StageStuck {
		p.disp.post(func() { fn(s.Err) }, false)
	}
	if fn := it.d.Retyping; fn != nil && s.Kind == StageRetyping {
		p.disp.post(func() { fn(s.Err) }, false)
	}
	if fn := it.d.Interrupted; fn != nil && s.Kind == StageInterrupted {
		p.disp.post(fn, false)
	}
	if fn := it.d.Cleared; fn != nil && s.Kind == StageCleared {
		p.disp.post(func() { fn(s.Held) }, false)
	}
}

// pointerPath is the file a message body goes to when not typed inline.
func (p *Pane) pointerPath(it *item) string {
	if p.spec.PointerDir == "" {
		return ""
	}
	id := it.d.MessageID
	if id == "" {
		sum := sha256.Sum256([]byte(it.d.Content))
		id = "msg-" + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(p.spec.PointerDir, fileID(id)+".txt")
}

// writePointer stores a body in its pointer file (0600, directory 0700),
// atomically.
func (p *Pane) writePointer(it *item, body string) (string, error) {
	path := p.pointerPath(it)
	if path == "" {
		return "", fmt.Errorf("message %s: %w", it.d.MessageID, ErrNoPointerDir)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create pointer dir: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("write pointer file: %w", err)
	}
	return path, nil
}
