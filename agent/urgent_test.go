package agent

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestUrgentJumpsAndInterrupts sends a normal message that starts a long
// busy spell (a spinner, input thrown away), then another normal message
// and an urgent one. The urgent message jumps the queue: it is submitted
// before the normal one queued ahead of it. Where the profile defines an
// interrupt, the busy spell is interrupted for it (the program logs the
// interrupt before the urgent prompt); where it does not, the urgent
// message waits for the spell to end. Either way nothing is typed into the
// busy program (no input thrown away), and each message is submitted once.
func TestUrgentJumpsAndInterrupts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		interrupt string
		spellMs   string
	}{
		{name: "Interrupt", interrupt: "\x1b", spellMs: "4000"},
		{name: "NoInterrupt", spellMs: "1500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, "FAKEAGENT_SPINNER_MS="+tc.spellMs, "FAKEAGENT_ENTER_MS=0")
			spec.Timing = hardTiming(">", true, true)
			spec.Timing.Interrupt = tc.interrupt
			p := startPane(t, spec)
			stages := newStageLog()
			send := func(id, content string) {
				p.Enqueue(Delivery{MessageID: id, Content: content, Report: stages.reporter(id)})
			}
			send("n1", "(ARCH #1): start working")
			poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("n1"), "n1 submitted") })
			poll.For(t, 10*time.Second, func() error {
				r := p.Status().Readiness
				return poll.Want(strings.HasPrefix(r, Busy.String()), "the busy spell on the screen, readiness %q", r)
			})
			send("n2", "(ARCH #2): after the urgent one")
			send("u1", "(ARCH #3): [URGENT] stop and read this")
			poll.For(t, 30*time.Second, func() error {
				return poll.Want(stages.final("u1") && stages.final("n2"), "u1 and n2 final")
			})
			for _, id := range []string{"n1", "u1", "n2"} {
				if got := stages.get(id); got[len(got)-1].Kind != StageSubmitted {
					t.Errorf("%s: final stage %v, want submitted", id, got[len(got)-1].Kind)
				}
			}
			// The urgent message's stages say it interrupted the program
			// (the ledger's interrupted event), and only where it did.
			interrupted := slices.ContainsFunc(stages.get("u1"), func(s Stage) bool { return s.Kind == StageInterrupted })
			if interrupted != (tc.interrupt != "") {
				t.Errorf("u1 stages %v: interrupted reported %v, want %v", stages.get("u1"), interrupted, tc.interrupt != "")
			}
			settle(t, logPath)
			var order []string
			interruptedAt := -1
			for _, r := range readPrompts(t, logPath) {
				switch {
				case r.Interrupted:
					interruptedAt = len(order)
				case r.Discarded != "":
					t.Errorf("input typed into the busy program and thrown away: %q", r.Discarded)
				case strings.TrimSpace(r.Prompt) != "":
					m := trailerRE.FindStringSubmatch(r.Prompt)
					if m == nil {
						t.Errorf("prompt without a trailer: %q", r.Prompt)
						continue
					}
					order = append(order, m[1])
				}
			}
			if want := []string{"n1", "u1", "n2"}; !slices.Equal(order, want) {
				t.Errorf("prompts in order %v, want %v (the urgent message jumps the queue, each once)", order, want)
			}
			switch {
			case tc.interrupt != "" && interruptedAt != 1:
				t.Errorf("interrupt logged before prompt %d, want right before the urgent one (1)", interruptedAt)
			case tc.interrupt == "" && interruptedAt >= 0:
				t.Errorf("a profile without an interrupt interrupted the program")
			}
		})
	}
}

// TestRawInputWaitsForRawMode: a program that stays in canonical mode
// (the kernel echoes and edits lines) for a while before it reads its
// prompt in raw mode, flushing what was typed meanwhile. With a profile
// that has no screen markers the screen looks ready at once; RawInput
// makes hm wait for raw mode, so the message is submitted once and nothing
// is thrown away.
func TestRawInputWaitsForRawMode(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_LATE_RAW_MS=1500", "FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0")
	spec.Timing = Profile{Idle: 30 * time.Millisecond, EnterDelay: 40 * time.Millisecond, Verify: 300 * time.Millisecond,
		EchoWait: 300 * time.Millisecond, RawInput: true}
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "r1", Content: "(ARCH #1): typed only once raw", Report: stages.reporter("r1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("r1"), "r1 final") })
	if got := stages.get("r1"); got[len(got)-1].Kind != StageSubmitted {
		t.Errorf("final stage %v, want submitted", got[len(got)-1].Kind)
	}
	settle(t, logPath)
	took := 0
	for _, r := range readPrompts(t, logPath) {
		switch {
		case r.Discarded != "":
			t.Errorf("typed into the canonical terminal and thrown away: %q", r.Discarded)
		case strings.Contains(r.Prompt, "[hm:r1]"):
			took++
		}
	}
	if took != 1 {
		t.Errorf("the program took the message %d times, want once", took)
	}
}

// TestUrgentAfterInterruptClearsInput: a program that, interrupted before
// its answer, puts the interrupted prompt back into its input (as Claude
// Code does). hm clears the input and sees it empty before it types the
// urgent message, so the urgent message is submitted alone: the earlier
// prompt is neither submitted again (merged with it) nor erased silently:
// the urgent message's StageCleared says what the input held. With a
// multi-line prompt in an input box whose Ctrl-U deletes only its last
// line, hm keeps erasing until nothing changes.
func TestUrgentAfterInterruptClearsInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first string
		env   []string
	}{
		{name: "OneLine", first: "(ARCH #1): start working"},
		{name: "MultiLineKillLine", first: "(ARCH #1): start working\nsecond line\nthird line", env: []string{"FAKEAGENT_KILL_LINE=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, append(tc.env, "FAKEAGENT_SPINNER_MS=6000", "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_RESTORE_ON_ESC=1")...)
			spec.Timing = hardTiming(">", true, true)
			spec.Timing.Interrupt = "\x1b"
			p := startPane(t, spec)
			stages := newStageLog()
			workingOn(t, p, stages, tc.first)
			p.Enqueue(Delivery{MessageID: "u1", Content: "(ARCH #2): [URGENT] stop and read this", Report: stages.reporter("u1")})
			poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("u1"), "u1 final") })
			got := stages.get("u1")
			if last := got[len(got)-1]; last.Kind != StageSubmitted {
				t.Errorf("u1 final stage %v (%v), want submitted", last.Kind, last.Err)
			}
			ci := slices.IndexFunc(got, func(s Stage) bool { return s.Kind == StageCleared })
			switch {
			case ci < 0:
				t.Errorf("u1 stages %v: no StageCleared saying what the input held", got)
			case !strings.Contains(got[ci].Held, "[hm:n1]"):
				t.Errorf("StageCleared held %q, want the restored prompt (its [hm:n1])", got[ci].Held)
			}
			settle(t, logPath)
			restored, submitted := false, map[string]int{}
			for _, r := range readPrompts(t, logPath) {
				restored = restored || r.Restored != ""
				if strings.TrimSpace(r.Prompt) == "" {
					continue
				}
				ids := anyTrailerRE.FindAllStringSubmatch(r.Prompt, -1)
				if len(ids) != 1 {
					t.Errorf("prompt with %d markers (merged or foreign text): %q", len(ids), r.Prompt)
				}
				for _, m := range ids {
					submitted[m[1]]++
				}
			}
			if !restored {
				t.Fatal("the program did not restore the interrupted prompt: the test proves nothing")
			}
			if submitted["n1"] != 1 || submitted["u1"] != 1 {
				t.Errorf("submitted %v, want n1 and u1 once each", submitted)
			}
		})
	}
}

// anyTrailerRE finds every "[hm:<id>]" in a prompt, wherever it stands.
var anyTrailerRE = regexp.MustCompile(`\[hm:([^\]\s]+)\]`)

// TestUrgentNeverDoubleEsc: Claude Code, Codex and Gemini CLI each take
// two Escs in quick succession as a command of its own (rewind, backtrack:
// Gemini opens a dialog for a person). A program that goes busy again just
// after hm's Esc interrupted it (work it resumes or had queued) must not
// get a second Esc within interruptGap of the first.
func TestUrgentNeverDoubleEsc(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_SPINNER_MS=3000", "FAKEAGENT_BUSY_AGAIN_MS=150", "FAKEAGENT_ENTER_MS=0")
	spec.Timing = hardTiming(">", true, true)
	spec.Timing.Interrupt, spec.Timing.Idle = "\x1b", 400*time.Millisecond
	p := startPane(t, spec)
	stages := newStageLog()
	workingOn(t, p, stages, "(ARCH #1): start working")
	p.Enqueue(Delivery{MessageID: "u1", Content: "(ARCH #2): [URGENT] stop", Report: stages.reporter("u1")})
	poll.For(t, 60*time.Second, func() error { return poll.Want(stages.final("u1"), "u1 final") })
	settle(t, logPath)
	var at []int64
	for _, r := range readPrompts(t, logPath) {
		if r.Interrupted {
			at = append(at, r.At)
		}
	}
	if len(at) == 0 {
		t.Fatal("the urgent message never interrupted the busy program")
	}
	for i := 1; i < len(at); i++ {
		if gap := time.Duration(at[i]-at[i-1]) * time.Millisecond; gap < interruptGap-100*time.Millisecond {
			t.Errorf("interrupt %d came %s after the one before (want at least %s): a double Esc", i+1, gap, interruptGap)
		}
	}
}

// TestHeldWatchLeavesRestoredPrompt: after hm's interrupt cancelled the
// turn of the last message it entered, a program that puts that prompt
// back into its input (as Claude Code does) shows the message's text
// where a lost Enter would have left it. That text is the cancelled
// prompt, not one held back: the idle pane's held watch must not press
// Enter for it (the model would get it twice). make test on a loaded
// machine saw the watch do so before the urgent message's clear ran
// (TestUrgentAfterInterruptClearsInput); here the watch runs at once.
func TestHeldWatchLeavesRestoredPrompt(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_SPINNER_MS=6000", "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_RESTORE_ON_ESC=1")
	spec.Timing = hardTiming(">", true, true)
	spec.Timing.Interrupt = "\x1b"
	p := startPane(t, spec)
	stages := newStageLog()
	workingOn(t, p, stages, "(ARCH #1): start working")
	p.mu.Lock()
	pr := p.proc
	p.mu.Unlock()
	if sent, ok := p.interrupt(pr, &item{d: Delivery{MessageID: "u1"}}); !sent || !ok {
		t.Fatalf("interrupt: sent %v, ok %v", sent, ok)
	}
	poll.For(t, 20*time.Second, func() error {
		s := p.Screen()
		c, _ := p.profile.Classify(s)
		return poll.Want(c == Ready && heldAtInput(s, viewInput(s, p.profile, Trailer("n1"))),
			"the cancelled prompt back at a ready input (rows %q)", s.Lines)
	})
	p.watchHeld()
	settle(t, logPath)
	restored, submitted := false, 0
	for _, r := range readPrompts(t, logPath) {
		restored = restored || r.Restored != ""
		submitted += strings.Count(r.Prompt, Trailer("n1"))
	}
	if !restored {
		t.Fatal("the program did not restore the interrupted prompt: the test proves nothing")
	}
	if submitted != 1 {
		t.Errorf("n1 submitted %d times, want once (the held watch entered the restored prompt)", submitted)
	}
}

// TestSlowRedrawNotEnteredAgain: a program that read hm's Enter but draws
// its answer only after the screen wait (its redraw late on a loaded
// machine) took the message: hm waits for that first output instead of
// pressing Enter again into a program busy with the text, where the Enter
// would be thrown away or taken as a command (make test saw a lone "\r"
// thrown away in TestUrgentJumpsAndInterrupts under load).
func TestSlowRedrawNotEnteredAgain(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_SUBMIT_LAG_MS=800", "FAKEAGENT_SPINNER_MS=1500", "FAKEAGENT_ENTER_MS=0")
	spec.Timing = hardTiming(">", true, true) // Verify 300 ms
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "s1", Content: "(ARCH #1): drawn late", Report: stages.reporter("s1")})
	poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("s1"), "s1 final") })
	if got := stages.get("s1"); got[len(got)-1].Kind != StageSubmitted {
		t.Errorf("s1 final stage %v, want submitted", stageKinds(got))
	}
	// The busy spell ends (a prompt again) before the log is read: what it
	// threw away is logged at its end.
	poll.For(t, 30*time.Second, func() error {
		s := p.Screen()
		c, _ := p.profile.Classify(s)
		return poll.Want(c == Ready && s.CursorRow >= 0 && strings.HasPrefix(strings.TrimSpace(s.Lines[s.CursorRow]), ">"), "a prompt after the busy spell (rows %q)", s.Lines)
	})
	settle(t, logPath)
	n := 0
	for _, r := range readPrompts(t, logPath) {
		if r.Discarded != "" {
			t.Errorf("input typed into the busy program and thrown away: %q", r.Discarded)
		}
		n += strings.Count(r.Prompt, Trailer("s1"))
	}
	if n != 1 {
		t.Errorf("s1 reached the program %d times, want once", n)
	}
}

// workingOn submits content to p as n1 and waits for the program's busy
// spell on the screen, for an urgent message to interrupt.
func workingOn(t *testing.T, p *Pane, stages *stageLog, content string) {
	t.Helper()
	p.Enqueue(Delivery{MessageID: "n1", Content: content, Report: stages.reporter("n1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("n1"), "n1 submitted") })
	poll.For(t, 10*time.Second, func() error {
		r := p.Status().Readiness
		return poll.Want(strings.HasPrefix(r, Busy.String()), "the busy spell on the screen, readiness %q", r)
	})
}
