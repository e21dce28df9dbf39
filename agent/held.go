package agent

import (
	"context"
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
	id      string
	trailer string
	presses int       // Enters pressed again because it stood at the input
	at      time.Time // when its Enter was pressed
	// pasted: its echo was the profile's collapsed-paste marker (its
	// trailer not on the screen), so held is that marker at the cursor.
	pasted bool
}

// heldPresses bounds the Enters pressed again for one message found still
// at the input; after them it is left there (and logged), since what the
// program does with it is no longer hm's to judge.
const heldPresses = 3

// noteEntered records that the Enter for the message with trailer went to
// pr. The caller holds inputMu.
func (p *Pane) noteEntered(pr *proc, id, trailer string, pasted bool) {
	p.lastEntered = enteredText{pr: pr, id: id, trailer: trailer, at: time.Now(), pasted: pasted}
}

// enterHeld presses Enter again for the last message entered into pr when
// its text still stands at the input (heldAtInput). It
// reports whether it did, in which case the caller does not type now and
// waits for the program to be ready again. The caller holds inputMu.
func (p *Pane) enterHeld(pr *proc) bool {
	last := &p.lastEntered
	if last.pr != pr || last.trailer == "" || last.presses >= heldPresses || pr.canonical() {
		return false // a cooked terminal hands the line over at Enter: nothing is held
	}
	s := p.Screen()
	at := viewInput(s, p.profile, last.trailer)
	if !heldAtInput(s, at) && !(last.pasted && at.count == 0 && pasteAtCursor(s, p.profile)) {
		return false
	}
	busyBefore, _ := p.profile.Classify(p.Screen())
	last.presses++
	p.startEnteredTurn(pr) // a hooked pane is busy again until its turn ends
	p.log.Warn("a message judged submitted still stands at the program's input; pressing Enter for it alone before typing the next",
		"id", last.id, "press", last.presses)
	if err := p.pressEnter(context.Background(), pr, nil); err != nil {
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

// pasteAtCursor reports whether the cursor's row of s shows one of the
// profile's collapsed-paste markers: a collapsed text at the input, where
// its trailer is not on the screen (Gemini CLI's "[Pasted Text: 13 lines]").
func pasteAtCursor(s Screen, prof Profile) bool {
	if s.CursorRow < 0 || s.CursorRow >= len(s.Lines) || len(prof.Screen.Pasted) == 0 {
		return false
	}
	return findMarker(s.Lines[s.CursorRow:s.CursorRow+1], prof.Screen.Pasted) != ""
}
