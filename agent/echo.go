package agent

import (
	"strings"
	"time"
	"unicode"
)

// Echo verification (issue #15): what the screen says about a message's
// text. Every typed line ends with the message's "[hm:<id>]" trailer, so the
// trailer on the screen near the cursor is the proof that the program shows
// the text at its input; after Enter, the trailer leaving the input area
// (or the program going busy) is the proof of a submission. Nothing here
// trusts "some output appeared".

// inputView is where a message's trailer stands on one screen.
type inputView struct {
	// count is how many times the trailer occurs on the screen.
	count int
	// row is the row where its last occurrence ends (-1 when count is 0).
	row int
	// below is how many rows the cursor is below row.
	below int
	// pasted: a collapsed-paste marker of the profile (Claude's "[Pasted
	// text #1 +20 lines]") stands near the cursor instead of the text;
	// pasteRow is the lowest row that shows one, pasteBelow how many rows
	// the cursor is below it (both -1 when pasted is false).
	pasted     bool
	pasteRow   int
	pasteBelow int
}

// viewInput locates trailer on s.
func viewInput(s Screen, prof Profile, trailer string) inputView {
	v := inputView{row: -1, pasteRow: -1, pasteBelow: -1}
	want := squeeze(trailer)
	if want == "" {
		return v
	}
	text, rowAt := flattenScreen(s)
	for from := 0; ; {
		i := strings.Index(text[from:], want)
		if i < 0 {
			break
		}
		end := from + i + len(want) - 1
		v.count++
		v.row = rowAt[end]
		from = end + 1
	}
	if v.count > 0 {
		v.below = s.CursorRow - v.row
	}
	if len(prof.Screen.Pasted) > 0 {
		lo := max(0, s.CursorRow-prof.markerRows())
		for y := min(len(s.Lines)-1, s.CursorRow+1); y >= lo; y-- {
			if findMarker(s.Lines[y:y+1], prof.Screen.Pasted) != "" {
				v.pasted, v.pasteRow, v.pasteBelow = true, y, s.CursorRow-y
				break
			}
		}
	}
	return v
}

// flattenScreen returns the screen's rows squeezed (blanks and box drawing
// removed) as one string, so that a text wrapped across rows, or split by a
// box's border, is still found, and rowAt, the row of each of its bytes.
func flattenScreen(s Screen) (text string, rowAt []int) {
	var flat strings.Builder
	for y, line := range s.Lines {
		sq := squeeze(line)
		flat.WriteString(sq)
		for range len(sq) {
			rowAt = append(rowAt, y)
		}
	}
	return flat.String(), rowAt
}

// headRunes is how much of a typed text's start the echo check looks for
// beside its trailer: the "[AGENT MSG …]" prefix and the role header.
const headRunes = 48

// textHead returns the start of text as the screen shows it (squeezed, the
// bracketed-paste markers left out), to be seen beside the trailer: a
// program that threw the first part of the text away and took the rest
// shows the trailer alone. It is "" (no check) where the start may be out
// of sight with nothing wrong: on the alternate screen, where full-screen
// programs draw an input box that shows only the tail of a long input,
// and for a text longer than six rows of the screen, whose start may
// have scrolled away or sit above an input box of a few rows.
func textHead(text string, s Screen) string {
	sq := []rune(squeeze(strings.NewReplacer(PasteStart, "", PasteEnd, "").Replace(text)))
	if s.AltScreen || s.Cols <= 0 || len(sq) > 6*s.Cols {
		return ""
	}
	return string(sq[:min(len(sq), headRunes)])
}

// textStart is what the echo check looks for of a typed text's start:
// its head (textHead; "" for none) and how many trailer marks the text
// holds before its own trailer (a body may quote another message's).
type textStart struct {
	head  string
	marks int
}

// startOf is textStart for text typed onto screen s.
func startOf(text string, s Screen) textStart {
	return textStart{head: textHead(text, s), marks: max(0, strings.Count(squeeze(text), trailerMark)-1)}
}

// standsBefore reports whether the start stands on s as the start of the
// text that ends at trailer's last occurrence: the head's last occurrence
// before that trailer, with no more trailer marks between them than the
// text holds itself (an earlier message's head is followed by its own
// trailer). A count of heads on the whole screen would not do: messages
// with one start ("[delayed from session 1] (ARCH #…") on a program that
// scrolls as it draws lose an earlier copy off the top as the new one
// appears.
func (st textStart) standsBefore(s Screen, trailer string) bool {
	text, _ := flattenScreen(s)
	tr := squeeze(trailer)
	end := strings.LastIndex(text, tr)
	if end < 0 {
		return false
	}
	// A short text's head holds its trailer too.
	at := strings.LastIndex(text[:end+len(tr)], st.head)
	return at >= 0 && at <= end && strings.Count(text[at:end], trailerMark) <= st.marks
}

// echoed reports whether a typed text is on screen s at the program's
// input (see shown), its start included where it can be told (start.head),
// and returns where its trailer stands.
func echoed(s Screen, prof Profile, trailer string, before inputView, start textStart) (inputView, bool) {
	v := viewInput(s, prof, trailer)
	if !v.shown(before, prof) {
		return v, false
	}
	return v, v.newPaste(before) || start.head == "" || start.standsBefore(s, trailer)
}

// newPaste reports whether a collapsed-paste marker newly stands at the
// input: none stood near the cursor before, or the one that did (an
// earlier paste, now in the history above the input) stood farther above
// it.
func (v inputView) newPaste(before inputView) bool {
	return v.pasted && (!before.pasted || v.pasteBelow < before.pasteBelow)
}

// shown reports whether the text just typed is on the screen at the
// program's input: its trailer occurs more often than before the typing
// (an earlier, thrown-away copy in the history does not count) and ends
// near the cursor, or the profile's collapsed-paste marker newly stands
// there.
func (v inputView) shown(before inputView, prof Profile) bool {
	if v.count > before.count && v.below >= 0 && v.below <= prof.markerRows() {
		return true
	}
	return v.newPaste(before)
}

// leftInput reports whether a submission is visible: compared with typed (the
// view when the text stood at the input, before Enter), the program went
// busy (not when its screen was busy already before Enter, typedBusy: a
// spinner left from the last turn or a CLI still starting says nothing of
// this Enter, and the text may still stand at the input), the trailer left the screen, or it moved away from the cursor by
// more than the one row a newline inside the input would add. Exactly one
// row more counts only when the cursor's row now shows something before
// the cursor (a redrawn prompt); a newline inside the input leaves it
// blank.
func leftInput(typed inputView, typedBusy bool, now inputView, s Screen, prof Profile) bool {
	if r, _ := prof.Classify(s); r == Busy && !typedBusy {
		return true
	}
	if typed.pasted && typed.count == 0 {
		return pasteLeft(typed, now, s, prof)
	}
	if now.count < typed.count || now.count == 0 {
		return true
	}
	return movedAway(typed.below, now.below, s)
}

// pasteLeft is leftInput for a text the program showed only as its
// collapsed-paste marker: the marker went, or moved away from the cursor
// (into the history, under a new prompt). Its trailer is not on the
// screen, so its absence there proves nothing: an Enter the program took
// as a newline (Gemini CLI does for one within 40 ms of a paste, and on a
// loaded machine later) leaves the marker in place with the cursor a row
// below it.
func pasteLeft(typed, now inputView, s Screen, prof Profile) bool {
	if !now.pasted {
		// The collapsed paste went: submitted, unless its text now stands
		// in full at the cursor (Gemini still starting shows a paste as
		// its marker, then as the text, and took no Enter).
		return !(now.count > typed.count && now.below >= 0 && now.below <= prof.markerRows())
	}
	return movedAway(typed.pasteBelow, now.pasteBelow, s)
}

// movedAway reports whether what stood typedBelow rows above the cursor
// when the text was typed left the input now that it stands nowBelow rows
// above it: by more than the one row a newline inside the input would
// add, or by exactly one row where the cursor's row now shows something
// before the cursor (a redrawn prompt; a newline inside the input leaves
// it blank).
func movedAway(typedBelow, nowBelow int, s Screen) bool {
	switch nowBelow - typedBelow {
	case 0:
		return false
	case 1:
		return promptBeforeCursor(s)
	}
	return nowBelow > typedBelow
}

// promptBeforeCursor reports whether the cursor's row holds anything but
// blanks and box drawing before the cursor.
func promptBeforeCursor(s Screen) bool {
	if s.CursorRow < 0 || s.CursorRow >= len(s.Lines) {
		return false
	}
	col := 0
	for _, r := range s.Lines[s.CursorRow] {
		if col >= s.CursorCol {
			break
		}
		col++
		if !blankOrBox(r) {
			return true
		}
	}
	return false
}

// squeeze drops blanks and box-drawing characters.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if blankOrBox(r) {
			return -1
		}
		return r
	}, s)
}

func blankOrBox(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x2500 && r <= 0x257F
}

// markerRows is how many rows from the bottom the profile's markers are
// searched in.
func (p Profile) markerRows() int {
	if p.Screen.Rows > 0 {
		return p.Screen.Rows
	}
	return defaultMarkerRows
}

// echoWait is how long typed text may take to appear on the screen.
func (p Profile) echoWait() time.Duration {
	if p.EchoWait > 0 {
		return p.EchoWait
	}
	return defaultEchoWait
}

// waitScreen waits until cond holds for the pane's screen, re-checking at
// each output, for at most d. ok reports cond; ended that the run ended or
// the pane stopped first.
func (p *Pane) waitScreen(pr *proc, d time.Duration, cond func(Screen) bool) (ok, ended bool) {
	deadline := time.Now().Add(d)
	for {
		p.mu.Lock()
		out := p.outChanged
		p.mu.Unlock()
		if cond(p.Screen()) {
			return true, false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, false
		}
		if !p.pauseOutput(pr, left, out, nil, nil) {
			return false, true
		}
	}
}
