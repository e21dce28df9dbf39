package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// A message hm judged submitted may still stand at the program's input: a
// program that was still mounting its UI took the Enter as nothing, cleared
// its screen (which looked like the text leaving, or like a busy program)
// and then drew the text back into its input. Typing the next message after
// it would submit both as one prompt. So before any message is typed, the
// last one entered is looked for at the input; found there, it is entered
// again, alone, and the next message waits for the program to be ready.
// With no next message to type, an idle pane watches its input for the
// last message for a while (watchHeld): Gemini CLI, given an Enter while
// it still cancelled an interrupted turn, queued the prompt and put it back
// into its input, where it would have stood for good.

// enteredText is the last message whose Enter hm pressed into one run.
type enteredText struct {
	pr      *proc
	it      *item // its queue item, put back ahead if it must go again (separateFromHeld)
	id      string
	trailer string
	presses int       // Enters pressed again because it stood at the input
	at      time.Time // when its Enter was pressed
	// pasted: its echo was the profile's collapsed-paste marker (its
	// trailer not on the screen), so held is that marker at the input
	// (pasteAtInput).
	pasted bool
	// interrupted: hm's interrupt keys went into its run after its Enter.
	// Its text at the input is then the prompt the program put back for
	// the turn hm cancelled (Claude Code does): the clear after the
	// interrupt erases it, and Enter is never pressed for it again.
	interrupted bool
}

// heldPresses bounds the Enters pressed again for one message found still
// at the input; after them it is left there (and logged), since what the
// program does with it is no longer hm's to judge.
const heldPresses = 3

// noteEntered records that the Enter for the message with trailer went to
// pr. The caller holds inputMu.
func (p *Pane) noteEntered(pr *proc, it *item, trailer string, pasted bool) {
	p.lastEntered = enteredText{pr: pr, it: it, id: it.d.MessageID, trailer: trailer, at: time.Now(), pasted: pasted}
}

// enterHeld presses Enter again for the last message entered into pr when
// its text still stands at the input (heldAtInput). It
// reports whether it did, in which case the caller does not type now and
// waits for the program to be ready again. The caller holds inputMu.
func (p *Pane) enterHeld(pr *proc) bool {
	last := &p.lastEntered
	if last.pr != pr || last.trailer == "" || last.interrupted || last.presses >= heldPresses || pr.canonical() {
		return false // a cooked terminal hands the line over at Enter: nothing is held
	}
	s := p.Screen()
	at := viewInput(s, p.profile, last.trailer)
	if !heldAtInput(s, at) && !(last.pasted && pasteAtInput(s, at)) {
		return false
	}
	busyBefore, _ := p.profile.Classify(p.Screen())
	last.presses++
	p.startEnteredTurn(pr) // a hooked pane is busy again until its turn ends
	p.armQueued(pr)
	p.log.Warn("a message judged submitted still stands at the program's input; pressing Enter for it alone before typing the next",
		"id", last.id, "press", last.presses)
	if err := p.pressEnter(context.Background(), pr, ""); err != nil {
		p.log.Warn("press enter again", "id", last.id, "err", err)
		return true
	}
	p.waitScreen(pr, patience(p.profile.Verify, last.presses), func(s Screen) bool {
		return leftInput(at, busyBefore == Busy, viewInput(s, p.profile, last.trailer), s, p.profile)
	})
	return true
}

// heldRows is how far below a held text's trailer the cursor may stand:
// the newlines the presses of Enter put into an input that took them as
// line breaks.
const heldRows = enterAttempts + heldPresses

// heldAtInput reports whether the trailer at stands at the program's input
// on s: on the cursor's row, or a few rows above it with nothing between
// them but blanks and box drawing and nothing before the cursor (Enters
// taken as newlines). A submitted text in the history above an input box
// is never that: the box's prompt stands before the cursor.
func heldAtInput(s Screen, at inputView) bool {
	if at.count == 0 || at.below < 0 || at.below > heldRows {
		return false
	}
	if at.below == 0 {
		return true
	}
	if promptBeforeCursor(s) {
		return false
	}
	for y := at.row + 1; y < s.CursorRow && y < len(s.Lines); y++ {
		if squeeze(s.Lines[y]) != "" {
			return false
		}
	}
	return true
}

// heldWatchFor is how long after its Enter an idle pane watches its input
// for the last message entered (watchHeld).
const heldWatchFor = 2 * time.Minute

// heldWatch reports whether an idle pane is to watch its input for the
// last message entered: its run still runs, Enter may still be pressed
// for it again, and its Enter was recent.
func (p *Pane) heldWatch() bool {
	p.inputMu.Lock()
	last := p.lastEntered
	p.inputMu.Unlock()
	p.mu.Lock()
	cur := p.proc
	p.mu.Unlock()
	return last.trailer != "" && last.pr == cur && cur != nil && !cur.isExited() &&
		last.presses < heldPresses && time.Since(last.at) < heldWatchFor
}

// watchHeld is the idle pane's look at its input, once its screen stood
// still for the quiet period: the last message entered, found there on a
// screen that is not busy, is entered again alone (enterHeld). Not after a
// person's keys (their Esc may have cancelled it, and a CLI puts a
// cancelled prompt back), and not once a hook said a turn began after
// that Enter (the program took it).
func (p *Pane) watchHeld() {
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	last := p.lastEntered
	p.mu.Lock()
	pr, quiet := p.proc, time.Since(p.lastOutput)
	taken := p.turnHookAt.After(last.at)
	p.mu.Unlock()
	if pr == nil || pr.isExited() || quiet < p.profile.Idle || taken || p.personTypedAfterHM() {
		return
	}
	if hold, _, _ := p.personHold(pr); hold {
		return
	}
	if c, _ := p.profile.Classify(p.Screen()); c == Busy || c == Blocked {
		return
	}
	p.enterHeld(pr)
}

// pasteAtInput reports whether a collapsed-paste marker stands at the
// program's input on s as heldAtInput tells a trailer: a collapsed text
// whose own trailer is not on the screen (Gemini CLI's "[Pasted Text: 13
// lines]"), on the cursor's row or above it with only the newlines of
// Enters taken as line breaks between.
func pasteAtInput(s Screen, at inputView) bool {
	return at.count == 0 && at.pasted && heldAtInput(s, inputView{count: 1, row: at.pasteRow, below: at.pasteBelow})
}

// The look before typing can come too early: a program redrawing its UI
// may show an empty prompt first and the held text only later (Gemini CLI
// on a loaded machine drew the session message back after the first
// message's typing began). So the screen is read once more just before
// the Enter: the new text standing right after the last message entered
// means that message's Enter was lost, and pressing Enter now would submit
// both as one prompt.

// typedOntoHeld reports whether t's text stands at the input right after
// the last message entered into its run: on the flattened screen (blanks
// and box drawing removed) the start of t's text follows that message's
// trailer, or the collapsed-paste marker it showed as, with nothing
// between but a bracketed paste indicator. A submitted text in the history is never that: the input's
// prompt, a receipt or the program's answer stands between. Not on a
// canonical terminal (a cooked line goes to the program at its Enter) and
// not where t's start cannot be told (textHead), and not once a hook said
// a turn began after that message's Enter (the program took it). A
// program that draws no prompt and no answer between two submitted texts
// would look the same; docs/protocol.md lists it under "Known limits".
// The caller holds inputMu.
func (p *Pane) typedOntoHeld(t *typing) bool {
	last := p.lastEntered
	if last.pr != t.pr || last.it == nil || last.it == t.it || last.trailer == "" || t.pr.canonical() {
		return false
	}
	p.mu.Lock()
	taken := p.turnHookAt.After(last.at) // a hook saw its turn begin
	p.mu.Unlock()
	if taken {
		return false
	}
	s := p.Screen()
	head := textHead(t.c.Text, s)
	if head == "" {
		return false
	}
	text, _ := flattenScreen(s)
	i := strings.LastIndex(text, head)
	if i < 0 {
		return false
	}
	held := func(before string) bool {
		return strings.HasSuffix(before, squeeze(last.trailer)) || last.pasted && endsWithPasteMarker(before, p.profile)
	}
	before := text[:i]
	if held(before) {
		return true
	}
	// A paste indicator the program drew before the new text
	// ("[pasted 60 bytes]") may stand between them.
	if j := strings.LastIndexByte(before, '['); j >= 0 && strings.HasSuffix(before, "]") && len(before)-j <= pasteMarkerMax {
		return held(before[:j])
	}
	return false
}

// endsWithPasteMarker reports whether flat (a flattened screen) ends with
// one of the profile's collapsed-paste markers ("[Pasted Text: 13 lines]").
func endsWithPasteMarker(flat string, prof Profile) bool {
	if !strings.HasSuffix(flat, "]") {
		return false
	}
	for _, m := range prof.Screen.Pasted {
		if j := strings.LastIndex(flat, squeeze(m)); j >= 0 && len(flat)-j <= pasteMarkerMax {
			return true
		}
	}
	return false
}

// pasteMarkerMax bounds a collapsed-paste marker's length once squeezed.
const pasteMarkerMax = 48

// separateFromHeld handles t's text typed onto the last message entered
// (typedOntoHeld): the input is emptied (clearInput: both texts go) and
// that message is put back at the head of the queue, ahead of t's, to be
// typed again alone; the ledger records the attempt and why. t's message
// is typed again after it, so deliver returns false. The caller holds
// inputMu; it is released.
func (p *Pane) separateFromHeld(t *typing) {
	held := p.lastEntered.it
	p.lastEntered = enteredText{}
	erased, err := p.clearInput(t.pr)
	t.in.unlock()
	if err != nil {
		p.log.Warn("typed onto a message whose Enter was lost, and the input did not empty", "id", t.it.d.MessageID, "held", held.d.MessageID, "err", err)
	}
	why := errors.New("its Enter was lost: its text still stood at the input when the next message was typed after it; both were erased, and it is typed again alone")
	p.log.Warn("a message judged submitted still stood at the input under the next one; erased both, typing it again alone first",
		"id", held.d.MessageID, "next", t.it.d.MessageID, "erased", erased)
	p.report(held, Stage{Kind: StageRetyping, Err: why})
	held.unseen, held.interrupted, held.cleared, held.uncleared = 0, false, false, 0
	p.qmu.Lock()
	held.started = false
	if !slices.Contains(p.queue, held) {
		p.queue = slices.Insert(p.queue, 0, held)
	}
	p.qmu.Unlock()
}
