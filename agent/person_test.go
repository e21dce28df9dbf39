package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/paneevents"
	"hm/internal/ground/poll"
)

// TestPeopleKeyScanner: a viewer's bytes are told apart as key presses or
// the answers of its terminal, and the keys' effect on the input line is
// modelled (people first, #15).
func TestPeopleKeyScanner(t *testing.T) {
	t.Parallel()
	answers := "\x1b[9;7R\x1b[?62;22c\x1b[>1;10;0c\x1b]11;rgb:1111/1111/1111\x07\x1b[?0u\x1bP>|viewer\x1b\\"
	tests := []struct {
		name   string
		writes []string
		keys   bool // the last write held a key
		line   personLine
	}{
		{"text", []string{"abc"}, true, personLine{runes: 3}},
		{"enter", []string{"abc", "\r"}, true, personLine{}},
		{"line feed", []string{"abc\n"}, true, personLine{}},
		{"text after enter", []string{"ab\rcd"}, true, personLine{runes: 2}},
		{"backspace", []string{"abc\x7f\x08"}, true, personLine{runes: 1}},
		{"backspace past empty", []string{"a\x7f\x7f"}, true, personLine{}},
		{"ctrl-c", []string{"abc\x03"}, true, personLine{}},
		{"ctrl-u", []string{"abc\x15"}, true, personLine{}},
		{"ctrl-w keeps the line", []string{"abc\x17"}, true, personLine{runes: 3}},
		{"tab completes", []string{"\t"}, true, personLine{}},
		{"ctrl-y yanks", []string{"\x19"}, true, personLine{unsure: true}},
		{"utf-8", []string{"日本"}, true, personLine{runes: 2}},
		{"history recall", []string{"\x1b[A"}, true, personLine{unsure: true}},
		{"recall in app cursor mode", []string{"\x1bOB"}, true, personLine{unsure: true}},
		{"recall cleared by enter", []string{"\x1b[A", "\r"}, true, personLine{}},
		{"arrows left and right", []string{"ab\x1b[D\x1b[C"}, true, personLine{runes: 2}},
		{"lone esc", []string{"ab", "\x1b"}, true, personLine{runes: 2}},
		{"alt+enter is a newline", []string{"ab\x1b\r"}, true, personLine{runes: 2}},
		{"paste", []string{"\x1b[200~a\rb\nc\x1b[201~"}, true, personLine{runes: 5}},
		{"paste across writes", []string{"\x1b[200~a", "\r", "b\x1b[201~"}, true, personLine{runes: 3}},
		{"terminal answers", []string{answers}, false, personLine{}},
		{"answer split across writes", []string{"\x1b]11;rgb:00", "00/0000/0000\x07"}, false, personLine{}},
		{"answer after text", []string{"ab", "\x1b[12;3R"}, false, personLine{runes: 2}},
		{"focus reports", []string{"\x1b[I\x1b[O"}, false, personLine{}},
		{"sgr mouse", []string{"\x1b[<0;10;5M\x1b[<0;10;5m"}, false, personLine{}},
		{"x10 mouse", []string{"\x1b[M !!"}, false, personLine{}},
		{"kitty ctrl-c", []string{"ab\x1b[99;5u"}, true, personLine{}},
		{"kitty enter", []string{"ab\x1b[13u"}, true, personLine{}},
		{"kitty shift+enter is a newline", []string{"ab\x1b[13;2u"}, true, personLine{runes: 2}},
		{"kitty backspace", []string{"ab\x1b[127u"}, true, personLine{runes: 1}},
		{"kitty text", []string{"\x1b[97u\x1b[65;2u"}, true, personLine{runes: 2}},
		{"kitty release", []string{"a\x1b[97;1:3u"}, true, personLine{runes: 1}},
	}
	for _, tc := range tests {
		var k keyScanner
		var line personLine
		var keys bool
		for _, w := range tc.writes {
			keys = k.feed([]byte(w), &line)
		}
		if keys != tc.keys || line != tc.line {
			t.Errorf("%s: %q gives keys %v, line %+v; want %v, %+v", tc.name, tc.writes, keys, line, tc.keys, tc.line)
		}
	}
	// Keys that answer a dialog leave the line alone.
	var k keyScanner
	line := personLine{runes: 4}
	if !k.feed([]byte("1\r"), nil) || line.runes != 4 {
		t.Errorf("dialog keys: line %+v", line)
	}
}

// peoplePane starts the fake agent (echoing) with a person attached.
func peoplePane(t *testing.T, quiet time.Duration, env ...string) (*Pane, *client, string) {
	t.Helper()
	spec, logPath := fakeSpec(t, append([]string{"FAKEAGENT_ECHO=1"}, env...)...)
	spec.PersonQuiet = quiet
	spec.StartupWait = 100 * time.Millisecond
	p := startPane(t, spec)
	base := attachServer(t, map[string]*Pane{"builder": p})
	c := attach(t, base+"builder", "secret", false)
	c.waitOutput(t, "fakeagent ready")
	return p, c, logPath
}

// typeKeys types s as the person in attach.
func (c *client) typeKeys(t *testing.T, s string) {
	t.Helper()
	if _, err := c.in.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// waitCursorRow waits until the pane's cursor row reads want.
func waitCursorRow(t *testing.T, p *Pane, want string) {
	t.Helper()
	poll.For(t, 10*time.Second, func() error {
		s := p.Screen()
		return poll.Want(s.Lines[s.CursorRow] == want, "cursor row %q, want %q", s.Lines[s.CursorRow], want)
	})
}

// TestPeopleHalfLineHoldsMessages: a line a person left half typed in
// attach holds queued messages, however long, until the person presses
// Enter; their line is then their own prompt, never merged with a message.
// Before #15 the messages were typed onto the person's line.
func TestPeopleHalfLineHoldsMessages(t *testing.T) {
	t.Parallel()
	p, c, logPath := peoplePane(t, 300*time.Millisecond)
	c.typeKeys(t, "half line")
	waitCursorRow(t, p, "> half line")
	stages := newStageLog()
	for _, id := range []string{"h1", "h2"} {
		p.Enqueue(Delivery{MessageID: id, Content: "(ARCH #1): message " + id, Report: stages.reporter(id)})
	}
	time.Sleep(1200 * time.Millisecond) // four times PersonQuiet
	if st := p.Status(); len(stages.get("h1")) != 0 || st.Queued != 2 || st.Waiting != WaitingForPerson {
		t.Fatalf("with a half line: stages %+v, status %+v", stages.get("h1"), st)
	}
	waitCursorRow(t, p, "> half line")
	c.typeKeys(t, " by hand")
	time.Sleep(100 * time.Millisecond) // the fake takes a quick Enter as a newline
	c.typeKeys(t, "\r")
	poll.For(t, 15*time.Second, func() error { return poll.Want(stages.final("h2"), "h2 final") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 3 || prompts[0].Prompt != "half line by hand" {
		t.Fatalf("prompts %+v: want the person's line alone, then the messages", prompts)
	}
	for i, id := range []string{"h1", "h2"} {
		got := prompts[i+1].Prompt
		if !strings.Contains(got, "message "+id) || !strings.Contains(got, "[hm:"+id+"]") || strings.Contains(got, "hand") {
			t.Errorf("prompt %d = %q, want message %s alone", i+1, got, id)
		}
		if k := stages.get(id)[len(stages.get(id))-1].Kind; k != StageSubmitted {
			t.Errorf("%s ended %v", id, k)
		}
	}
}

// TestPeopleRecentKeysDelayMessages: after a person's last key in attach,
// messages, urgent ones too, wait PersonQuiet, then are delivered. Before
// #15 they were typed at once.
func TestPeopleRecentKeysDelayMessages(t *testing.T) {
	t.Parallel()
	const quiet = 1500 * time.Millisecond
	p, c, logPath := peoplePane(t, quiet)
	c.typeKeys(t, "hello")
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	c.typeKeys(t, "\r")
	c.waitOutput(t, "received 5 bytes: hello")
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "u1", Content: "(ARCH #1): [URGENT] urgent one", Report: stages.reporter("u1")})
	p.Enqueue(Delivery{MessageID: "n1", Content: "(ARCH #1): normal one", Report: stages.reporter("n1")})
	poll.For(t, 15*time.Second, func() error { return poll.Want(stages.final("n1"), "n1 final") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 3 || prompts[0].Prompt != "hello" || !strings.Contains(prompts[1].Prompt, "urgent one") || !strings.Contains(prompts[2].Prompt, "normal one") {
		t.Fatalf("prompts %+v", prompts)
	}
	for _, pr := range prompts[1:] {
		after := time.UnixMilli(pr.At).Sub(t0)
		if after < quiet-time.Millisecond || after > quiet+3*time.Second {
			t.Errorf("%q typed %v after the person's last key, want about %v", pr.Prompt, after, quiet)
		}
	}
}

// TestPeopleStatusWaiting: Status.Waiting says that a message waits for
// the person in attach, and nothing once the person cleared the line (a
// Ctrl-C) and the message went in. Before #15 there was no such status.
func TestPeopleStatusWaiting(t *testing.T) {
	t.Parallel()
	p, c, logPath := peoplePane(t, 300*time.Millisecond)
	c.typeKeys(t, "x")
	waitCursorRow(t, p, "> x")
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "s1", Content: "(ARCH #1): status check", Report: stages.reporter("s1")})
	poll.For(t, 10*time.Second, func() error {
		st := p.Status()
		return poll.Want(st.Waiting == WaitingForPerson && st.Queued == 1, "status %+v", st)
	})
	c.typeKeys(t, "\x03")
	poll.For(t, 15*time.Second, func() error { return poll.Want(stages.final("s1"), "s1 final") })
	if st := p.Status(); st.Waiting != "" {
		t.Errorf("Waiting = %q after delivery", st.Waiting)
	}
	if prompts := readPrompts(t, logPath); len(prompts) != 1 || !strings.HasPrefix(prompts[0].Prompt, "[AGENT MSG") {
		t.Errorf("prompts %+v", prompts)
	}
}

// TestPeopleNoSecondEnterOnTheirLine: when the program showed no reaction
// to a message's Enter and a person typed meanwhile, hm does not press
// Enter again: that would submit the person's line. Before #15 it did (the
// fake logged the message and the person's text as one prompt).
//
// Slow: the person's keys reach the terminal 300 ms before the pane goes on
// (as a loaded machine may delay it): their echo on the row under the
// message was taken for a redrawn prompt, the message reported submitted,
// until the person's keys were recorded before they were written.
func TestPeopleNoSecondEnterOnTheirLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lag  time.Duration
	}{{"Prompt", 0}, {"Slow", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			noSecondEnter(t, tc.lag)
		})
	}
}

func noSecondEnter(t *testing.T, lag time.Duration) {
	// The fake takes an Enter within 2 s of other input as a newline, so
	// the message's first Enter (EnterDelay 70 ms after the echo showed)
	// submits nothing, even on a loaded machine where the echo takes a
	// while to come back (with 500 ms it once submitted under make test).
	p, c, logPath := peoplePane(t, 300*time.Millisecond, "FAKEAGENT_ENTER_MS=2000")
	if lag > 0 {
		hook := func() { time.Sleep(lag) }
		p.afterInput.Store(&hook)
	}
	time.Sleep(300 * time.Millisecond) // the banner settles
	stages := newStageLog()
	entered := make(chan struct{}, 1)
	p.Enqueue(Delivery{MessageID: "e1", Content: "(ARCH #1): no second enter", Report: stages.reporter("e1"),
		Callbacks: paneevents.Callbacks{Submitted: func(proven bool) {
			if !proven {
				entered <- struct{}{}
			}
		},
		},
	})
	select {
	case <-entered:
	case <-time.After(15 * time.Second):
		t.Fatal("no first Enter")
	}
	c.typeKeys(t, "zz") // the person types during Verify
	poll.For(t, 15*time.Second, func() error { return poll.Want(stages.final("e1"), "e1 final") })
	got := stages.get("e1")
	last := got[len(got)-1]
	if last.Kind != StageUnverified || !errors.Is(last.Err, errPersonFirst) {
		t.Errorf("stages %+v: want unverified, no second Enter", got)
	}
	time.Sleep(700 * time.Millisecond) // a late second Enter would be a prompt by now
	if prompts := readPrompts(t, logPath); len(prompts) != 0 {
		t.Errorf("prompts %+v: the person's line was submitted", prompts)
	}
}

// TestPeopleEnterAfterTheirLineShows: a person's Enter goes into the
// program only once it has read and drawn the line typed before it. The
// fake draws typed keys 300 ms late and submits its input as last drawn,
// throwing the rest away (as Gemini CLI 0.61 does, which on a loaded
// machine lost a person's last keys in make test); it takes an Enter read
// within 50 ms of a key as a newline. Before the hold, the Enter typed
// 100 ms after the line submitted an empty prompt and threw the line
// away, and the Enter written with the line was a newline: nothing was
// submitted.
func TestPeopleEnterAfterTheirLineShows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		writes []string
	}{
		{"EnterApart", []string{"hello world", "\r"}},
		{"EnterWithTheLine", []string{"hello world\r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c, logPath := peoplePane(t, 300*time.Millisecond, "FAKEAGENT_DRAW_MS=300", "FAKEAGENT_ENTER_MS=50")
			for i, w := range tc.writes {
				if i > 0 {
					time.Sleep(100 * time.Millisecond)
				}
				c.typeKeys(t, w)
			}
			c.waitOutput(t, "received 11 bytes: hello world")
			if prompts := readPrompts(t, logPath); len(prompts) != 1 || prompts[0].Prompt != "hello world" {
				t.Errorf("prompts %+v: want the person's line whole, once", prompts)
			}
		})
	}
}

// TestPeopleSubmitAt: where a viewer's write holds the key that submits
// the line, so that hm can hold it (holdPersonEnter).
func TestPeopleSubmitAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before string // written earlier
		b      string
		want   int
	}{
		{"none", "", "hello", -1},
		{"enter alone", "", "\r", 0},
		{"after text", "", "hello\r", 5},
		{"line feed", "", "ab\nc", 2},
		{"first of two", "", "a\rb\r", 1},
		{"kitty enter", "", "ab\x1b[13u", 2},
		{"kitty enter begun earlier", "ab\x1b[1", "3u", 0},
		{"kitty shift+enter", "", "ab\x1b[13;2u", -1},
		{"alt+enter", "", "ab\x1b\r", -1},
		{"in a paste", "", "\x1b[200~a\rb\x1b[201~", -1},
		{"after a paste", "", "\x1b[200~a\rb\x1b[201~\r", 15},
		{"paste begun earlier", "\x1b[200~a", "\rb", -1},
		{"in an answer", "", "\x1b]11;rgb:0\r0/0\x07", -1},
		{"x10 mouse", "", "\x1b[M\r!!x\r", 7},
		{"ctrl-c", "", "ab\x03", -1},
	}
	for _, tc := range tests {
		var k keyScanner
		k.feed([]byte(tc.before), nil)
		was := scannerState(k)
		if got := k.submitAt([]byte(tc.b)); got != tc.want {
			t.Errorf("%s: submitAt(%q) after %q = %d, want %d", tc.name, tc.b, tc.before, got, tc.want)
		}
		if now := scannerState(k); now != was {
			t.Errorf("%s: submitAt changed the scanner: %s, was %s", tc.name, now, was)
		}
	}
}

// scannerState is k's state as a comparable string.
func scannerState(k keyScanner) string {
	return fmt.Sprintf("%d %v %q %v %d", k.state, k.osc, k.params, k.paste, k.skip)
}

// FuzzKeyScanner: any bytes, in any two writes, scan without a panic;
// submitAt leaves the scanner as it was and finds the first Enter that
// feed sees, at the start of its key.
func FuzzKeyScanner(f *testing.F) {
	for _, s := range []string{"abc\r", "\x1b[200~a\r\x1b[201~\r", "\x1b[13u", "\x1b]0;t\x1b\\\r", "\x1b[M\r\r\r\r", "\x1bO\r"} {
		f.Add([]byte(s), []byte(s))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var k keyScanner
		var line personLine
		k.feed(a, &line)
		was := scannerState(k)
		at := k.submitAt(b)
		if scannerState(k) != was {
			t.Fatalf("submitAt changed the scanner")
		}
		first := -1
		for i, c := range b {
			k.step(c, func(e keyEdit) {
				if e == editSubmit && first < 0 {
					first = i
				}
			})
		}
		switch {
		case (at < 0) != (first < 0):
			t.Fatalf("submitAt %d, an Enter ends at %d", at, first)
		case at > first || at >= len(b):
			t.Fatalf("submitAt %d after the Enter's end %d (len %d)", at, first, len(b))
		}
	})
}
