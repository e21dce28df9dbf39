package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"hm/agent/internal/vterm"
)

// Bad input (#15): programs that print garbage, malformed or truncated
// escape sequences, huge titles, reset sequences mid-typing, or exit while
// a message is half typed. The hub stays up, the emulator never panics,
// every message is submitted whole and exactly once, and the stages say
// what happened.

// outputPane is a pane with a current run but no program: enough of one
// for its output path (handleOutput: the emulator, the scanner, the replay
// ring, the replies) and what reads the screen.
func outputPane(cols, rows int) (*Pane, *proc) {
	pr := &proc{exited: make(chan struct{}), replies: make(chan []byte, replyQueue)}
	p := &Pane{
		spec:        Spec{Cols: uint16(cols), Rows: uint16(rows), RingBytes: 4096},
		profile:     ProfileFor(ProfileDefault).withOverrides(Profile{Screen: Markers{Ready: []string{">"}, Busy: spinners}}),
		log:         slog.New(slog.DiscardHandler),
		stopCh:      make(chan struct{}),
		procChanged: make(chan struct{}),
		outChanged:  make(chan struct{}),
		person:      personState{changed: make(chan struct{})},
		cols:        uint16(cols),
		rows:        uint16(rows),
		ring:        newRing(4096),
		vt:          vterm.New(cols, rows),
		subs:        map[*subscription]struct{}{},
		proc:        pr,
	}
	return p, pr
}

// FuzzEmulator feeds arbitrary program output, cut into arbitrary chunks,
// through a pane's output path, with a resize of the emulator and an hm notice in the
// middle, and checks that nothing panics and the screen stays sane: as
// many rows as the terminal has, the cursor on the screen, a bounded title,
// valid text, and a screen every reader of it (readiness, echo
// verification, attach's redraw, the replay) can take.
func FuzzEmulator(f *testing.F) {
	for _, s := range []string{
		"fakeagent ready\r\n\x1b[?2004h> ",
		"\x1b]0;" + strings.Repeat("T", 5000) + "\x07> typed [hm:x-1]",
		"\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33;34H\x1b[",
		"\x1b[?1049h\x1b[?2004hpartial\x1bc\x1b[?2004hok\x1b[!p> ",
		"\x1bP" + strings.Repeat("q#0;2;0;0;0", 100) + "\x1b\\done\x9b6n\x9d0;t\x9c",
		"\xff\xfe\xe6\x97\x1b[38;5;99999999999m\x1b[99999;99999H\x1b[50;2r\x1b[0;0r\x1b[4h日本\x1b[2P\x1b[5@",
		"\x1b[6n\x1b[c\x1b[>c\x1b]11;?\x07\x1b[?u\x1b[>q\x1b[?2004$p\x1b[18t",
		"⠋ working…\r\x1b[K> [hm:x-1]\r\n",
	} {
		f.Add([]byte(s), []byte{3, 7, 1, 200}, uint8(80), uint8(24))
	}
	f.Fuzz(func(t *testing.T, out, cuts []byte, cols, rows uint8) {
		p, pr := outputPane(int(cols), int(rows))
		check := func(when string) {
			t.Helper()
			s := p.Screen()
			switch {
			case s.Cols < 1 || s.Rows < 1:
				t.Fatalf("%s: size %dx%d", when, s.Cols, s.Rows)
			case len(s.Lines) != s.Rows:
				t.Fatalf("%s: %d lines on a screen of %d rows", when, len(s.Lines), s.Rows)
			case s.CursorRow < 0 || s.CursorRow >= s.Rows || s.CursorCol < 0 || s.CursorCol >= s.Cols:
				t.Fatalf("%s: cursor %d,%d outside %dx%d", when, s.CursorRow, s.CursorCol, s.Cols, s.Rows)
			case len(s.Title) > vterm.MaxTitle || !utf8.ValidString(s.Title):
				t.Fatalf("%s: title of %d bytes, valid UTF-8 %v", when, len(s.Title), utf8.ValidString(s.Title))
			}
			for y, l := range s.Lines {
				if !utf8.ValidString(l) || utf8.RuneCountInString(l) > s.Cols {
					t.Fatalf("%s: row %d is %q (%d runes on %d columns)", when, y, l, utf8.RuneCountInString(l), s.Cols)
				}
			}
			p.profile.Classify(s)
			viewInput(s, p.profile, Trailer("x-1"))
			promptBeforeCursor(s)
			if got := p.ring.Len(); got > len(p.ring.buf) {
				t.Fatalf("%s: ring holds %d bytes, capacity %d", when, got, len(p.ring.buf))
			}
		}
		// Chunks as the reader would get them: sizes from cuts, in turn.
		for i, k := 0, 0; i < len(out); k++ {
			n := len(out) - i
			if len(cuts) > 0 {
				n = min(n, int(cuts[k%len(cuts)])+1)
			}
			p.handleOutput(pr, out[i:i+n])
			i += n
			if k == 1 {
				// Pane.Resize without a PTY to resize.
				p.vtMu.Lock()
				p.vt.Resize(int(rows)+1, int(cols)/2+1)
				p.vtMu.Unlock()
				p.notice("restarting in 50ms")
			}
			if k < 8 || k%256 == 0 { // a full check costs a screen's copy
				check(fmt.Sprintf("after %d bytes", i))
			}
			for len(pr.replies) > 0 {
				<-pr.replies
			}
		}
		check("at the end")
		screen, _, cancel := p.subscribeScreen(int(cols)%200+1, int(rows)%60+1)
		cancel()
		if len(screen) == 0 {
			t.Fatal("attach's redraw is empty")
		}
		lastLine(p.ring.Tail(2048))
	})
}
