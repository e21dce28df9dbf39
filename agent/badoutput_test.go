package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"hm/internal/ground/poll"

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

// badCase is one fake program that prints bad output or ends badly.
type badCase struct {
	name  string
	about string
	env   []string // fakeagent variables
	// exits: the program ends while messages are typed, and the pane
	// restarts it; else it must run throughout.
	exits bool
	// garbage: the program prints garbage spells; resets: it resets the
	// terminal while messages are typed. Both are checked to happen.
	garbage, resets bool
	// enterNow: no Enter delay, so that the Enter is in the terminal
	// before the program (which exits after reading the text) is gone.
	enterNow bool
}

// badMsgs is how many messages each bad case types: short, multi-line,
// control bytes, emoji and CJK, shell syntax, a long line (hardMessages).
const badMsgs = 6

func badCases() []badCase {
	return []badCase{
		{name: "RandomBytes10MBps", about: "random bytes at 10 MiB/s for 150 ms before the banner and after each prompt",
			env: []string{"FAKEAGENT_GARBAGE_KBPS=10240", "FAKEAGENT_GARBAGE_MS=150", "FAKEAGENT_GARBAGE=bytes"}, garbage: true},
		{name: "TruncatedEscapes", about: "malformed, truncated and out-of-range escape sequences, invalid UTF-8, C1 controls and queries",
			env: []string{"FAKEAGENT_GARBAGE_KBPS=2048", "FAKEAGENT_GARBAGE_MS=100", "FAKEAGENT_GARBAGE=escapes"}, garbage: true},
		{name: "HugeTitles", about: "an OSC title of 1 MiB (ended by BEL, ST or nothing) at the start of each spell",
			env: []string{"FAKEAGENT_GARBAGE_KBPS=10240", "FAKEAGENT_GARBAGE_MS=50", "FAKEAGENT_GARBAGE=titles"}, garbage: true},
		{name: "ResetsInOutput", about: "RIS and DECSTR, some after switching the alternate screen on or bracketed paste off",
			env: []string{"FAKEAGENT_GARBAGE_KBPS=1024", "FAKEAGENT_GARBAGE_MS=100", "FAKEAGENT_GARBAGE=resets"}, garbage: true},
		{name: "AllGarbage10MBps", about: "every kind of garbage at 10 MiB/s for 200 ms",
			env: []string{"FAKEAGENT_GARBAGE_KBPS=10240", "FAKEAGENT_GARBAGE_MS=200"}, garbage: true},
		{name: "ResetMidTyping", about: "a reset (RIS, then DECSTR, in turn) after each read of a half-typed prompt",
			env: []string{"FAKEAGENT_RESET_ON_INPUT=1"}, resets: true},
		{name: "QueryMidTyping", about: "asks for the cursor position on each read of input and echoes it only after the answer",
			env: []string{"FAKEAGENT_QUERY_ON_INPUT=1"}},
		{name: "ExitHalfTyped", about: "from each run's second prompt on, exits after at most 64 bytes of a prompt",
			env: []string{"FAKEAGENT_EXIT_MID=64"}, exits: true},
		{name: "ExitTypedNotEntered", about: "from each run's second prompt on, exits after the first read of a prompt (often all of its text), before Enter",
			env: []string{"FAKEAGENT_EXIT_MID=65536"}, exits: true},
		// The Enter is written before the program exits, and never read:
		// it waits in the terminal's input queue when the program goes,
		// so the message was not submitted and is typed again (a loaded
		// make test run found ExitTypedNotEntered's Enter there, lost).
		{name: "ExitWithEnterUnread", about: "exits after the first read of a prompt, its Enter already written and never read",
			env: []string{"FAKEAGENT_EXIT_MID=65536"}, exits: true, enterNow: true},
	}
}

// badLogMax bounds the pane log of a bad case (rotated beyond).
const badLogMax = 256 << 10

// TestBadOutput types messages into programs that print garbage, huge
// titles and resets, reset or query the terminal while a message is typed,
// or exit while a message is half typed, and checks
// that the pane stays up (its program runs throughout, or is restarted
// when it exits), that each message is submitted whole and exactly once,
// in order (a message cut by an exit typed again whole into the next run,
// never continued), that the stages say what happened, and that the
// pane's buffers stay bounded.
func TestBadOutput(t *testing.T) {
	t.Parallel()
	msgs := hardMessages(badMsgs)
	for _, bc := range badCases() {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0"}, bc.env...)
			spec, logPath := fakeSpec(t, env...)
			spec.Timing = hardTiming(">", false, true)
			// Output floods delay the echo on a loaded machine (-race, a
			// full make test): the default echo wait, not the hard
			// cases' short one, so a slow screen is not taken for a
			// program that is not listening.
			spec.Timing.EchoWait = defaultEchoWait
			if bc.exits {
				// The program exits right after it read a text; an
				// Enter pressed before it is gone would be lost with it
				// (unverified, never typed twice): keep it well after.
				spec.Timing.EnterDelay = 100 * time.Millisecond
			}
			if bc.enterNow {
				spec.Timing.EnterDelay = time.Millisecond
			}
			spec.Restart = true
			spec.LogMaxBytes = badLogMax
			var seen programTally
			spec.OnLine = seen.line
			p := startPane(t, spec)
			stages := typeBatch(t, p, msgs, logPath, bc.about, nil)
			recs := readPrompts(t, logPath)
			st := p.Status()
			t.Logf("%s: %d messages, %s, %d restarts", bc.about, len(msgs), seen.String(), st.Restarts)
			checkBadDelivery(t, msgs, recs, stages, bc.exits)
			if !bc.exits {
				if st.Restarts != 0 || st.State == StateExited {
					t.Errorf("the program should run throughout: %d restarts, state %s, last error %q", st.Restarts, st.State, st.LastError)
				}
			}
			checkBounds(t, p, spec)
			// A spell before the banner and one after each message (the
			// last one may still be printing); a RIS and a DECSTR at least.
			poll.For(t, 20*time.Second, func() error {
				seen.mu.Lock()
				defer seen.mu.Unlock()
				return poll.Want(!(bc.garbage && seen.spells < len(msgs)+1 || bc.resets && seen.resets < 2),
					"the program printed %d garbage spells and %d resets", seen.spells, seen.resets)
			})
		})
	}
}

// programTally sums what a fake program reports doing: its garbage
// spells, and the resets it made while a prompt was typed.
type programTally struct {
	mu           sync.Mutex
	spells       int
	bytes, spent int64
	resets       int
}

var (
	garbageRE = regexp.MustCompile(`fakeagent garbage: (\d+) bytes in (\d+) ms`)
	resetRE   = regexp.MustCompile(`fakeagent reset (\d+) \(RIS\)`)
)

// line is an OnLine callback.
func (g *programTally) line(l string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := resetRE.FindStringSubmatch(l); m != nil {
		n, _ := strconv.Atoi(m[1])
		g.resets = max(g.resets, n)
	}
	if m := garbageRE.FindStringSubmatch(l); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		g.spells++
		g.bytes += n
		g.spent += ms
	}
}

func (g *programTally) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.spells == 0 {
		return fmt.Sprintf("no garbage, %d resets", g.resets)
	}
	return fmt.Sprintf("%.1f MiB of garbage in %d spells (%.1f MiB/s while it printed)", float64(g.bytes)/(1<<20), g.spells,
		float64(g.bytes)/(1<<20)/(float64(max(g.spent, 1))/1000))
}

// checkBadDelivery checks what the program took against the messages and
// the stages: each message submitted once, whole, in order, and reported
// submitted once; what an exit cut was a message's start, from another
// run than the one that took the message whole.
func checkBadDelivery(t *testing.T, msgs []hardMsg, recs []promptRec, stages *stageLog, exits bool) {
	t.Helper()
	index := map[string]int{}
	for i, m := range msgs {
		index[m.id] = i
	}
	taken := make([][]promptRec, len(msgs))
	cuts := make([][]promptRec, len(msgs))
	last := -1
	for _, r := range recs {
		if r.Discarded != "" {
			i := slices.IndexFunc(msgs, func(m hardMsg) bool { return strings.Contains(r.Discarded, m.header()) })
			if i < 0 {
				t.Errorf("the program threw away %q, which starts no message", r.Discarded)
				continue
			}
			cuts[i] = append(cuts[i], r)
			continue
		}
		if strings.TrimSpace(r.Prompt) == "" {
			continue // an extra Enter on an empty input
		}
		mt := trailerRE.FindStringSubmatch(r.Prompt)
		i, ok := 0, mt != nil
		if ok {
			i, ok = index[mt[1]]
		}
		if !ok {
			t.Errorf("the program took %d bytes that end in no message's trailer: %.200q", len(r.Prompt), r.Prompt)
			continue
		}
		if i < last {
			t.Errorf("message %d submitted after message %d", i, last)
		}
		last = max(last, i)
		taken[i] = append(taken[i], r)
	}
	for i, m := range msgs {
		st := stages.get(m.id)
		if len(taken[i]) != 1 {
			t.Errorf("message %d submitted %d times; stages %s", i, len(taken[i]), stageKinds(st))
			continue
		}
		rec := taken[i][0]
		if !whole(m, rec.Prompt) {
			want, _ := m.want(true)
			t.Errorf("message %d not whole:\n got %.300q\nwant %.300q", i, rec.Prompt, want)
		}
		var submitted, retyping int
		for _, s := range st {
			switch s.Kind {
			case StageSubmitted:
				submitted++
			case StageRetyping:
				retyping++
				if !errors.Is(s.Err, ErrPaneExited) || submitted > 0 {
					t.Errorf("message %d: stages %s, want retyping (program exited) before submitted", i, stageKinds(st))
				}
			case StageTyped:
			default:
				t.Errorf("message %d: stage %s (%v)", i, s.Kind, s.Err)
			}
		}
		if submitted != 1 {
			t.Errorf("message %d: stages %s, want one submitted", i, stageKinds(st))
		}
		// The ledger says what happened: each exit that cut the message
		// (the program logged what it read of it) is one retyping.
		if retyping != len(cuts[i]) {
			t.Errorf("message %d: the program exited %d times while it was typed; stages %s", i, len(cuts[i]), stageKinds(st))
		}
		for _, c := range cuts[i] {
			if c.PID == rec.PID {
				t.Errorf("message %d: the run that cut it (pid %d) took it: continued, not typed again", i, c.PID)
			}
		}
		if !exits && len(cuts[i]) > 0 {
			t.Errorf("message %d: the program threw away %q", i, cuts[i][0].Discarded)
		}
	}
	if exits && len(msgs) > 1 && slices.IndexFunc(cuts, func(c []promptRec) bool { return len(c) > 0 }) < 0 {
		t.Errorf("the program never exited with a message half typed")
	}
}

// whole reports whether a logged prompt is m, whole: inline (in a paste,
// or outside one with tabs and newlines flattened), or the pointer line to
// a file holding its body.
func whole(m hardMsg, got string) bool {
	got = strings.TrimRight(got, "\n")
	for _, multi := range []bool{true, false} {
		if want, pointer := m.want(multi); !pointer && got == want {
			return true
		}
	}
	return strings.HasPrefix(got, AgentPrefix+m.header()) && strings.HasSuffix(got, "] "+Trailer(m.id)) && pointerBody(got) == Neutralize(m.content)
}

// pointerBody is the content of the file a pointer line names.
func pointerBody(line string) string {
	_, rest, ok := strings.Cut(line, " bytes) in ")
	path, _, ok2 := strings.Cut(rest, "] [hm:")
	if !ok || !ok2 {
		return ""
	}
	b, _ := os.ReadFile(path)
	return string(b)
}

// checkBounds checks that a pane that took bad output keeps its screen
// sane and its buffers within their bounds: the replay ring, the title, the
// pane log and its one rotation.
func checkBounds(t *testing.T, p *Pane, spec Spec) {
	t.Helper()
	s := p.Screen()
	if len(s.Lines) != s.Rows || s.CursorRow >= s.Rows || s.CursorCol >= s.Cols || len(s.Title) > vterm.MaxTitle {
		t.Errorf("screen %dx%d with %d lines, cursor %d,%d, title of %d bytes", s.Cols, s.Rows, len(s.Lines), s.CursorRow, s.CursorCol, len(s.Title))
	}
	p.mu.Lock()
	ring := p.ring.Len()
	p.mu.Unlock()
	if ring > p.spec.RingBytes {
		t.Errorf("replay ring holds %d bytes, bound %d", ring, p.spec.RingBytes)
	}
	for _, path := range []string{spec.LogPath, spec.LogPath + ".1"} {
		if fi, err := os.Stat(path); err == nil && fi.Size() > spec.LogMaxBytes {
			t.Errorf("pane log %s is %d bytes, bound %d", path, fi.Size(), spec.LogMaxBytes)
		}
	}
}
