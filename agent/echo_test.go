package agent

import (
	"strings"
	"testing"
)

// screenOf builds a Screen from rows, with the cursor at (row, col).
func screenOf(row, col int, rows ...string) Screen {
	return Screen{Lines: rows, Cols: 40, Rows: len(rows), CursorRow: row, CursorCol: col}
}

// TestEchoViews: the trailer near the cursor proves the text is at the
// input; after Enter only a visible submission counts, never a newline
// inside the input or "some output".
func TestEchoViews(t *testing.T) {
	t.Parallel()
	const tr = "[hm:m1]"
	prof := Profile{Name: "test", Screen: Markers{Busy: []string{"working"}, Pasted: []string{"[Pasted text #"}}}
	empty := screenOf(1, 2, "banner", "> ")
	typed := screenOf(1, 16, "banner", "> hello [hm:m1]")
	tests := []struct {
		name        string
		before, now Screen
		shown, left bool
	}{
		{name: "nothing typed", before: empty, now: empty},
		{name: "echoed at the cursor", before: empty, now: typed, shown: true},
		{name: "echo wrapped across rows", before: empty, now: screenOf(2, 3, "banner", "> hello [hm", ":m1]"), shown: true},
		{name: "echo inside a box", before: empty, now: screenOf(2, 12, "banner", "│ > hi [hm: │", "│ m1]       │"), shown: true},
		{name: "old copy in the history only", before: screenOf(3, 2, "> hello [hm:m1]", "receipt", "", "> "), now: screenOf(3, 2, "> hello [hm:m1]", "receipt", "", "> ")},
		{name: "collapsed paste", before: empty, now: screenOf(1, 30, "banner", "> [Pasted text #1 +20 lines]"), shown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, n := viewInput(tc.before, prof, tr), viewInput(tc.now, prof, tr)
			if got := n.shown(b, prof); got != tc.shown {
				t.Errorf("shown = %v, want %v (before %+v, now %+v)", got, tc.shown, b, n)
			}
		})
	}
	after := []struct {
		name      string
		typedBusy bool // the screen was busy already before Enter
		now       Screen
		left      bool
	}{
		{name: "unchanged", now: typed},
		{name: "newline inside the input", now: screenOf(2, 0, "banner", "> hello [hm:m1]", "")},
		{name: "newline inside a box", now: screenOf(2, 2, "banner", "│ > hello [hm:m1]", "│ ")},
		{name: "prompt redrawn below", now: screenOf(2, 2, "banner", "> hello [hm:m1]", "> "), left: true},
		{name: "output then prompt", now: screenOf(3, 2, "banner", "> hello [hm:m1]", "done", "> "), left: true},
		{name: "scrolled: output then prompt", now: screenOf(2, 2, "> hello [hm:m1]", "done", "> "), left: true},
		{name: "input cleared", now: screenOf(1, 2, "banner", "> "), left: true},
		{name: "busy", now: screenOf(1, 16, "banner working", "> hello [hm:m1]"), left: true},
		// Gemini starting up, or a spinner left from the last turn: the
		// Enter went nowhere and the text stands at the input.
		{name: "busy before Enter, text still at the input", typedBusy: true, now: screenOf(1, 16, "banner working", "> hello [hm:m1]")},
		{name: "busy before Enter, input cleared", typedBusy: true, now: screenOf(1, 2, "banner working", "> "), left: true},
		{name: "moved into the history above a box", now: screenOf(5, 4, "banner", "> hello [hm:m1]", "", "╭────╮", "│ >  │", "╰────╯"), left: true},
	}
	tv := viewInput(typed, prof, tr)
	for _, tc := range after {
		t.Run("after enter: "+tc.name, func(t *testing.T) {
			if got := leftInput(tv, tc.typedBusy, viewInput(tc.now, prof, tr), tc.now, prof); got != tc.left {
				t.Errorf("left = %v, want %v (typed %+v, now %+v)", got, tc.left, tv, viewInput(tc.now, prof, tr))
			}
		})
	}
	// Typed as a collapsed paste: the marker going, or moving into the
	// history under a new prompt, is a submission, unless the text now
	// stands in full at the cursor (Gemini starting up: the paste shown as
	// its text, the Enter not taken). The marker still at the input is
	// none, whatever the trailer (not on the screen) does: an Enter taken
	// as a newline under it (Gemini CLI within 40 ms of a paste; make test
	// on a loaded machine found the ledger saying submitted for a message
	// the model never got).
	pasted := viewInput(screenOf(1, 30, "banner", "> [Pasted text #1 +20 lines]"), prof, tr)
	for _, tc := range []struct {
		name string
		now  Screen
		left bool
	}{
		{name: "paste marker into the history, a new prompt", now: screenOf(3, 2, "banner", "> [Pasted text #1 +20 lines]", "ok", "> "), left: true},
		{name: "paste marker a row up, a new prompt under it", now: screenOf(2, 2, "banner", "> [Pasted text #1 +20 lines]", "> "), left: true},
		{name: "paste marker gone, input empty", now: screenOf(2, 2, "banner", "ok", "> "), left: true},
		{name: "paste marker gone, its text at the cursor", now: screenOf(2, 18, "banner", "> line one", "line two [hm:m1]")},
		{name: "paste marker redrawn in place", now: screenOf(1, 30, "banner", "> [Pasted text #1 +20 lines]")},
		{name: "paste marker with a newline under it", now: screenOf(2, 2, "banner", "> [Pasted text #1 +20 lines]", "  ")},
		{name: "paste marker and its newline in a box", now: screenOf(2, 2, "banner", "│ > [Pasted text #1 +20 lines] │", "│                              │", "╰──────────────────────────────╯")},
	} {
		t.Run("after enter on a paste: "+tc.name, func(t *testing.T) {
			if got := leftInput(pasted, false, viewInput(tc.now, prof, tr), tc.now, prof); got != tc.left {
				t.Errorf("left = %v, want %v (typed %+v, now %+v)", got, tc.left, pasted, viewInput(tc.now, prof, tr))
			}
		})
	}
}

// FuzzViewInput: any screen text and trailer, no panic, and a trailer that
// is found ends on a row of the screen.
func FuzzViewInput(f *testing.F) {
	f.Add("> hello [hm:m1]\nnext", "[hm:m1]", 1, 3)
	f.Add("│ a │\n╰─╯", "[hm:x]", 0, 0)
	f.Add("", "", -1, -1)
	f.Fuzz(func(t *testing.T, text, trailer string, row, col int) {
		s := screenOf(row, col, strings.Split(text, "\n")...)
		prof := Profile{Screen: Markers{Pasted: []string{"[Pasted"}, Busy: []string{"busy"}}}
		v := viewInput(s, prof, trailer)
		if v.count > 0 && (v.row < 0 || v.row >= len(s.Lines)) {
			t.Fatalf("trailer ends on row %d of %d", v.row, len(s.Lines))
		}
		_ = v.shown(inputView{row: -1}, prof)
		_ = leftInput(v, false, v, s, prof)
		_ = promptBeforeCursor(s)
	})
}

// TestEchoNeedsTheStart: the text's trailer at the input is not proof that
// the text is there whole: a program that threw the first part of a typing
// away (busy without a sign of it) and took the rest shows the trailer
// alone, and Enter would submit a torn prompt (TestHardCase/SilentlyBusy
// under make test-loaded: "not intact", the prompt began mid-sentence).
// Where the start may be out of sight with nothing wrong (an alternate-
// screen input box showing the tail, a text longer than six rows) the
// trailer suffices.
//
// Messages with one start ("[delayed from session 1] (ARCH #…" after a
// hub restart) on a program that scrolls as it draws: the new text's
// start pushes an earlier copy of it off the top, so the start stands as
// often as before the typing (TestRealCLIs/codex/*/hubkill: four messages
// stuck, "the text never appeared on the screen in 6 typings").
func TestEchoNeedsTheStart(t *testing.T) {
	const trailer = "[hm:m1]"
	text := "[AGENT MSG - reply via hm-send] (ARCH #24): long line: before queue pressing queue before for " + trailer
	long := "[AGENT MSG - reply via hm-send] (ARCH #25): " + strings.Repeat("word ", 200) + trailer
	quoting := "[AGENT MSG - reply via hm-send] (ARCH #26): the answer to [hm:m0] is yes " + trailer
	const delayed = "[AGENT MSG - reply via hm-send] [delayed from session 1] (ARCH #"
	earlier, later := delayed+"2): stream message 1 [hm:m0]", delayed+"3): stream message 2 "+trailer
	screen := func(alt bool, rows ...string) Screen {
		return Screen{Lines: rows, Cols: 80, Rows: 24, CursorRow: len(rows) - 1, AltScreen: alt}
	}
	empty := screen(false, "> ")
	for _, tc := range []struct {
		name        string
		text        string
		before, now Screen // before: empty when unset
		want        bool
	}{
		{"whole, wrapped", text, Screen{}, screen(false, "> "+text[:70], text[70:]), true},
		{"torn: its start thrown away", text, Screen{}, screen(false, "> queue before for "+trailer), false},
		{"alternate screen: the box shows the tail", text, Screen{}, screen(true, "│ > queue before for "+trailer+" │"), true},
		{"longer than six rows: the start scrolled away", long, Screen{}, screen(false, "> "+long[len(long)-60:]), true},
		{"a body quoting a trailer", quoting, Screen{}, screen(false, "> "+quoting), true},
		{"shorter than its head", "(ARCH #1): hi " + trailer, Screen{}, screen(false, "> (ARCH #1): hi "+trailer), true},
		{"one start: the earlier copy scrolled off", later,
			screen(false, "› "+earlier[:70], "  "+earlier[70:], "• ok", "› "),
			screen(false, "• ok", "› "+later[:70], "  "+later[70:]), true},
		{"one start, torn: the earlier copy's start is not this one's", later,
			screen(false, "› "+earlier, "• ok", "› "),
			screen(false, "› "+earlier, "• ok", "› stream message 2 "+trailer), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.before
			if before.Lines == nil {
				before = empty
				before.AltScreen = tc.now.AltScreen
			}
			start := startOf(tc.text, before)
			_, got := echoed(tc.now, Profile{}, trailer, viewInput(before, Profile{}, trailer), start)
			if got != tc.want {
				t.Errorf("echoed = %v, want %v (start %+v)", got, tc.want, start)
			}
		})
	}
}

// TestBuiltinPasteMarkers: each CLI's collapsed paste, as its pinned
// version shows it (scripts/agent-clis.txt), proves the text arrived
// under its built-in profile (issue #32: Codex showed "[Pasted Content
// 2617 chars]" for a 2.5 KB paste, Gemini "[Pasted Text: 10 lines]" for
// more than about 5 lines, and both ended stuck).
func TestBuiltinPasteMarkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ profile, row string }{
		{ProfileClaude, "❯ [Pasted text #1 +20 lines]"},
		{ProfileCodex, "› [Pasted Content 2617 chars]"},
		{ProfileGemini, " >   [Pasted Text: 10 lines]"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			prof := ProfileFor(tc.profile)
			before := screenOf(1, 2, "banner", tc.row[:4])
			now := screenOf(1, len([]rune(tc.row)), "banner", tc.row)
			if !viewInput(now, prof, "[hm:m1]").shown(viewInput(before, prof, "[hm:m1]"), prof) {
				t.Errorf("%q is not taken as the text typed (pasted markers %q)", tc.row, prof.Screen.Pasted)
			}
			// An earlier paste's marker in the history above the input
			// does not hide the new one.
			before = screenOf(3, 2, "banner", tc.row, "ok", tc.row[:4])
			now = screenOf(3, len([]rune(tc.row)), "banner", tc.row, "ok", tc.row)
			if !viewInput(now, prof, "[hm:m2]").shown(viewInput(before, prof, "[hm:m2]"), prof) {
				t.Errorf("%q under an earlier paste's marker is not taken as the text typed", tc.row)
			}
		})
	}
}
