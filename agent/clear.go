package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// After an interrupt: what the program's input holds is not hm's. Claude
// Code, interrupted before its answer, puts the interrupted turn's prompt
// back into its input box; typing an urgent message after it and pressing
// Enter would submit both as one prompt (SPEC §6 step 6). So hm erases the
// input and sees it empty before it types.

// maxClearPresses bounds the presses of the erase keys one clearing makes:
// each press clears at least one line of the input (the erase keys, then a
// Backspace that joins the line above).
const maxClearPresses = 24

// clearAfterInterrupt empties the input of the program hm just
// interrupted for it, before its text is typed; the caller holds inputMu
// and unlock releases it. ok: the input was seen empty, go on typing (the
// lock still held). Otherwise the lock is released and done is what
// deliver returns: false to try again at the next readiness, true once
// the message is reported stuck (the input never showed empty in
// typeAttempts tries: its text is never submitted with foreign text).
func (p *Pane) clearAfterInterrupt(pr *proc, it *item, unlock func()) (done, ok bool) {
	held, err := p.clearInput(pr)
	if err == nil {
		it.cleared = true
		if held != "" {
			p.log.Warn("erased what the input held after the interrupt, before the urgent message", "id", it.d.MessageID, "held", held)
			p.report(it, Stage{Kind: StageCleared, Held: held})
		}
		return false, true
	}
	unlock()
	it.uncleared++
	if it.uncleared >= typeAttempts {
		err = fmt.Errorf("%w: after the interrupt the input never showed empty in %d tries (%v): its text is not typed after it", ErrStuck, it.uncleared, err)
		p.log.Warn("message stuck", "id", it.d.MessageID, "err", err)
		p.report(it, Stage{Kind: StageStuck, Err: err})
		return true, false
	}
	p.log.Info("input not seen empty after the interrupt; trying again when the pane is ready", "id", it.d.MessageID, "err", err)
	p.pause(pr, p.profile.Idle, &it.waited)
	return false, false
}

// clearInput presses the profile's erase keys and a Backspace until a press
// changes nothing on the screen (the input is empty: there was nothing
// left to erase), each press written with the terminal raw (one the
// kernel's line editor may have taken is an error), and returns what the
// presses erased: the rows of the screen before the first press that
// differ from the screen after the last, trimmed. The caller holds
// inputMu.
func (p *Pane) clearInput(pr *proc) (string, error) {
	first := p.Screen()
	prev := first
	keys := []byte(p.profile.erase() + backspace)
	for range maxClearPresses {
		_, mode, err := p.writeNoting(context.Background(), pr, keys)
		if err != nil {
			return "", fmt.Errorf("erase: %w", err)
		}
		if mode != modeRaw {
			// The kernel's line editor may have taken the press: a
			// screen it leaves unchanged says nothing of the program's
			// input (inputMode.erases).
			return "", fmt.Errorf("the erase keys may not have reached the program: its terminal was not raw")
		}
		changed, ended := p.waitScreen(pr, p.profile.echoWait(), func(s Screen) bool { return !sameScreen(s, prev) })
		if ended {
			return "", p.endReason(pr)
		}
		if !changed {
			return erasedRows(first, prev), nil
		}
		if !p.waitQuiet(pr, p.profile.echoWait()) {
			return "", p.endReason(pr)
		}
		prev = p.Screen()
	}
	return "", fmt.Errorf("the screen still changed after %d presses of the erase keys", maxClearPresses)
}

// waitQuiet waits until the pane has been quiet for the profile's Idle, at
// most d; false when the run ended or the pane stopped.
func (p *Pane) waitQuiet(pr *proc, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		p.mu.Lock()
		last, out := p.lastOutput, p.outChanged
		p.mu.Unlock()
		quiet := time.Since(last)
		if quiet >= p.profile.Idle || time.Now().After(deadline) {
			return true
		}
		if !p.pauseOutput(pr, p.profile.Idle-quiet, out, nil, nil) {
			return false
		}
	}
}

// sameScreen reports whether two screens show the same text and cursor.
func sameScreen(a, b Screen) bool {
	return a.CursorRow == b.CursorRow && a.CursorCol == b.CursorCol && slices.Equal(a.Lines, b.Lines)
}

// erasedRows is what was on before and is gone on after: before's rows
// that differ from after's, blanks and box drawing trimmed, one per line.
func erasedRows(before, after Screen) string {
	var out []string
	for y, line := range before.Lines {
		if y < len(after.Lines) && after.Lines[y] == line {
			continue
		}
		if t := strings.TrimFunc(line, blankOrBox); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}

// eraseMissed clears the input, before the message is typed again, of
// its earlier typing that did not show and that the erase after it may
// have missed (it.eraseDue: the kernel took that erase, while the program
// may hold the typing, read while its terminal was raw). Once the
// terminal is raw the input is cleared and seen empty (clearInput), the
// program reading the erase keys after what it holds; until then the
// message is not typed again, at most drainWait, then it is reported
// stuck: never typed twice into one prompt. The caller holds inputMu.
// ok: the input was seen empty, go on typing (the lock still held).
// Otherwise the lock is released (unlock) and done is what deliver
// returns: true once the message is reported stuck.
func (p *Pane) eraseMissed(pr *proc, it *item, unlock func(), stage func(StageKind, error) Stage) (done, ok bool) {
	err := errors.New("its terminal is canonical: the program does not read")
	if !pr.canonical() {
		var held string
		if held, err = p.clearInput(pr); err == nil {
			it.eraseDue = time.Time{}
			p.log.Info("cleared the input of a typing that did not show before typing it again", "id", it.d.MessageID, "held", held)
			return false, true
		}
	}
	unlock()
	if waited := time.Since(it.eraseDue); waited >= drainWait {
		err = fmt.Errorf("%w: its text did not show, and in %s the input was never seen empty with the terminal raw (%v): the program may still hold that typing, so the message is not typed again", ErrStuck, waited.Round(time.Second), err)
		p.log.Warn("message stuck", "id", it.d.MessageID, "err", err)
		p.report(it, stage(StageStuck, err))
		return true, false
	}
	p.log.Debug("input not seen free of a typing that did not show; not typing it again yet", "id", it.d.MessageID, "err", err)
	p.pause(pr, canonicalRecheck, &it.waited)
	return false, false
}
