package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/paneevents"
	"hm/internal/ground/poll"
	"hm/internal/ground/promptlog"
)

// expectPrompt is what the fake agent should log for an inline message
// typed with bracketed paste.
func expectPrompt(id, content string) string {
	return AgentPrefix + content + " [hm:" + id + "]"
}

// mixedMessage returns message i of a mixed-shape batch.
func mixedMessage(i int) (content string, urgent bool) {
	head := fmt.Sprintf("(ARCH #%d): ", i+1)
	switch i % 5 {
	case 0:
		return head + fmt.Sprintf("one line message %d", i), false
	case 1:
		return head + fmt.Sprintf("multi-line %d\nsecond line\n\tindented third\n\nafter a blank", i), false
	case 2:
		return head + strings.Repeat(fmt.Sprintf("long body %d; ", i), 10*1024/14), false
	case 3:
		return head + fmt.Sprintf("unicode %d: héllo wörld ✓ 日本語 🚀 ½", i), false
	default:
		return head + fmt.Sprintf("[URGENT] fix it now %d", i), true
	}
}

// TestDeliverMixedHundred types 100 mixed messages (one line, multi-line,
// 10 KiB, Unicode, urgent) into the fake agent, once as a profile that takes
// a multi-line paste as one prompt (claude, codex, gemini) and once as one
// that does not: every message is submitted once, whole and in order (the
// urgent ones jump the queue: in order among themselves, and never after a
// normal message enqueued after them); the
// trailer ends the last line; a multi-line body goes inline only to the
// multi-line profile, the other gets the one-line pointer to its file.
func TestDeliverMixedHundred(t *testing.T) {
	t.Parallel()
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprintf("multiLine=%v", multi), func(t *testing.T) {
			t.Parallel()
			deliverMixedHundred(t, multi)
		})
	}
}

func deliverMixedHundred(t *testing.T, multi bool) {
	spec, logPath := fakeSpec(t)
	spec.Timing.MultiLine, spec.Timing.MultiLineSet = multi, true
	p := startPane(t, spec)
	stages := newStageLog()
	const n = 100
	ids := make([]string, n)
	contents := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("hm-1700000000%03d-abc%03d", i, i)
		var urgent bool
		contents[i], urgent = mixedMessage(i)
		p.Enqueue(Delivery{MessageID: ids[i], Content: contents[i], Urgent: urgent, Report: stages.reporter(ids[i])})
	}
	if q := p.Status().Queued; q == 0 {
		t.Errorf("Status.Queued = 0 right after enqueueing %d messages", n)
	}
	// Every message, not the last enqueued: an urgent one jumps ahead, so
	// the message typed last may be an earlier one.
	poll.For(t, 90*time.Second, func() error {
		for i, id := range ids {
			if !stages.final(id) {
				return fmt.Errorf("message %d not final yet (queued %d)", i, p.Status().Queued)
			}
		}
		return poll.Want(p.Status().Queued == 0, "the queue to empty")
	})
	prompts := readPrompts(t, logPath)
	if len(prompts) != n {
		var got []string
		for _, r := range prompts {
			got = append(got, fmt.Sprintf("%.60q…%q", r.Prompt, r.Prompt[max(0, len(r.Prompt)-40):]))
		}
		t.Fatalf("fake agent got %d prompts, want %d:\n%s", len(prompts), n, strings.Join(got, "\n"))
	}
	index := map[string]int{}
	for i, id := range ids {
		index[id] = i
	}
	seen := map[int]bool{}
	lastNormal, lastUrgent := -1, -1
	pointers := 0
	for k, rec := range prompts {
		// An Enter that the agent took for a newline (a loaded machine) is
		// repaired by the second Enter; the prompt then ends in "\n".
		got := strings.TrimRight(rec.Prompt, "\n")
		m := trailerRE.FindStringSubmatch(got)
		i, ok := 0, false
		if m != nil {
			i, ok = index[m[1]]
		}
		if !ok || seen[i] {
			t.Errorf("prompt %d: not one of the messages, or one taken twice: %q", k, got)
			continue
		}
		seen[i] = true
		_, urgent := mixedMessage(i)
		last := &lastNormal
		if urgent {
			last = &lastUrgent
		}
		if i < *last {
			t.Errorf("prompt %d is message %d after message %d: out of order (urgent %v)", k, i, *last, urgent)
		}
		*last = i
		if !urgent && i > lastUrgent {
			for u := lastUrgent + 1; u < i; u++ {
				if _, uu := mixedMessage(u); uu {
					t.Errorf("normal message %d submitted before the urgent message %d enqueued ahead of it", i, u)
					break
				}
			}
		}
		multiLineBody := strings.Contains(contents[i], "\n")
		if len(contents[i]) <= MaxInlineBody && (multi || !multiLineBody) {
			if want := expectPrompt(ids[i], contents[i]); got != want {
				t.Errorf("prompt %d:\n got %q\nwant %q", i, got, want)
			}
			continue
		}
		// Pointer message: one line naming the file, the trailer ending it.
		pointers++
		path := filepath.Join(spec.PointerDir, ids[i]+".txt")
		wantStart := AgentPrefix + fmt.Sprintf("(ARCH #%d): ", i+1)
		if !strings.HasPrefix(got, wantStart) || !strings.HasSuffix(got, path+"] [hm:"+ids[i]+"]") || strings.Contains(got, "\n") {
			t.Errorf("pointer prompt %d = %q", i, got)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("pointer file: %v", err)
		}
		if string(body) != contents[i] {
			t.Errorf("pointer file %s holds %d bytes, want the %d-byte message", path, len(body), len(contents[i]))
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("pointer file mode = %v, %v; want 0600", st.Mode(), err)
		}
	}
	if want := map[bool]int{true: 20, false: 40}[multi]; pointers != want {
		t.Errorf("%d messages went by pointer, want %d (the 10 KiB ones%s)", pointers, want, map[bool]string{true: "", false: " and the multi-line ones"}[multi])
	}
	for i, id := range ids {
		st := stages.get(id)
		if len(st) != 2 || st[0].Kind != StageTyped || st[1].Kind != StageSubmitted {
			t.Errorf("message %d stages = %+v, want typed then submitted", i, st)
		}
		if len(contents[i]) > MaxInlineBody && (len(st) == 0 || st[0].Pointer == "") {
			t.Errorf("message %d: typed stage names no pointer file", i)
		}
	}
	if info, err := os.Stat(spec.PointerDir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("pointer dir mode = %v, %v; want 0700", info.Mode(), err)
	}
	if s := p.Status(); !s.BracketedPaste || s.PID == 0 || s.Restarts != 0 {
		t.Errorf("status = %+v", s)
	}
}

func TestDeliverWithoutBracketedPaste(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_NO_PASTE=1")
	p := startPane(t, spec)
	stages := newStageLog()
	msgs := []struct {
		id, content string
		pointer     bool
		want        string
	}{
		{"m1", "(ARCH #1): single\tline", false, AgentPrefix + "(ARCH #1): single line [hm:m1]"},
		{"m2", "(ARCH #2): first\nsecond", true, ""},
		{"m3", "(ARCH #3): trailing newlines are trimmed\n\n", false, AgentPrefix + "(ARCH #3): trailing newlines are trimmed [hm:m3]"},
	}
	for _, m := range msgs {
		p.Enqueue(Delivery{MessageID: m.id, Content: m.content, Report: stages.reporter(m.id)})
	}
	poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("m3"), "deliveries") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != len(msgs) {
		t.Fatalf("got %d prompts, want %d: %+v", len(prompts), len(msgs), prompts)
	}
	for i, m := range msgs {
		got := strings.TrimRight(prompts[i].Prompt, "\n")
		if strings.Contains(got, "\n") {
			t.Errorf("prompt %d is not one line: %q", i, got)
		}
		if m.pointer {
			path := filepath.Join(spec.PointerDir, m.id+".txt")
			want := AgentPrefix + fmt.Sprintf("(ARCH #2): first … [full message (%d bytes) in ", len(m.content)) + path + "] [hm:m2]"
			if got != want {
				t.Errorf("pointer prompt:\n got %q\nwant %q", got, want)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != m.content {
				t.Errorf("pointer file = %q, %v", b, err)
			}
			continue
		}
		if got != m.want {
			t.Errorf("prompt %d:\n got %q\nwant %q", i, got, m.want)
		}
	}
	if p.Status().BracketedPaste {
		t.Error("BracketedPaste reported although the program never enabled it")
	}
}

func TestBusyPaneWaits(t *testing.T) {
	t.Parallel()
	const busy = 1200 * time.Millisecond
	spec, logPath := fakeSpec(t, fmt.Sprintf("FAKEAGENT_BUSY_MS=%d", busy.Milliseconds()))
	spec.Timing.Idle = 150 * time.Millisecond
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "b1", Content: "(ARCH #1): start working", Report: stages.reporter("b1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("b1"), "first message submitted") })
	// The agent now prints for a while; the next message must wait.
	p.Enqueue(Delivery{MessageID: "b2", Content: "(ARCH #2): next", Report: stages.reporter("b2")})
	sawBusy := false
	poll.For(t, 30*time.Second, func() error {
		if s := p.Status(); s.State == StateBusy && s.Queued == 1 {
			sawBusy = true
		}
		return poll.Want(stages.final("b2"), "second message submitted")
	})
	if !sawBusy {
		t.Error("never saw state busy with the message queued")
	}
	prompts := readPrompts(t, logPath)
	if len(prompts) != 2 {
		t.Fatalf("got %d prompts, want 2", len(prompts))
	}
	if gap := time.Duration(prompts[1].At-prompts[0].At) * time.Millisecond; gap < busy {
		t.Errorf("second prompt arrived %s after the first, inside the %s busy spell", gap, busy)
	}
	if got := strings.TrimRight(prompts[1].Prompt, "\n"); got != expectPrompt("b2", "(ARCH #2): next") {
		t.Errorf("second prompt = %q", got)
	}
}

// TestUrgentSkipsIdleWait: an [URGENT] message does not wait for the pane to
// fall quiet, a normal one behind it does. The pane's output never stops
// until the urgent message is in, so a delivery that waited for the quiet
// period would never come; the normal message then goes once it is quiet.
// Nothing here depends on how fast the machine is: a loaded machine may
// pause the ticker long enough to look quiet, which only lets the messages
// in sooner.
func TestUrgentSkipsIdleWait(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	stop := filepath.Join(t.TempDir(), "stop")
	spec.Command = "(while [ ! -e " + shellQuote(stop) + " ]; do echo tick; sleep 0.05; done; echo ticker done) & exec " + shellQuote(fakeAgent(t))
	spec.Timing.Idle = 300 * time.Millisecond
	spec.StartupWait = 200 * time.Millisecond
	p := startPane(t, spec)
	stages := newStageLog()
	poll.For(t, time.Minute, func() error { return poll.Want(strings.Count(string(p.Replay()), "tick") > 3, "ticker output") })
	p.Enqueue(Delivery{MessageID: "u1", Content: "(ARCH #1): [URGENT] now", Urgent: true, Report: stages.reporter("u1")})
	p.Enqueue(Delivery{MessageID: "n1", Content: "(ARCH #2): normal", Report: stages.reporter("n1")})
	poll.For(t, 2*time.Minute, func() error {
		return poll.Want(stages.final("u1"), "urgent message submitted while the pane's output never stops")
	})
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 2*time.Minute, func() error { return poll.Want(stages.final("n1"), "normal message once the ticker stopped") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 2 || !strings.Contains(prompts[0].Prompt, "[URGENT] now") || !strings.Contains(prompts[1].Prompt, "normal") {
		t.Errorf("prompts = %+v; want the urgent one, then the normal one", prompts)
	}
}

func TestRestartMidQueueDeliversRest(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_EXIT_AFTER=3")
	spec.Restart = true
	var exits []int
	exitCh := make(chan int, 16)
	spec.OnExit = func(code int, err error) { exitCh <- code }
	p := startPane(t, spec)
	stages := newStageLog()
	const n = 8
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		p.Enqueue(Delivery{MessageID: id, Content: fmt.Sprintf("(ARCH #%d): restart test %d", i+1, i), Report: stages.reporter(id)})
	}
	poll.For(t, 60*time.Second, func() error {
		return poll.Want(len(readPrompts(t, logPath)) >= n && stages.final(fmt.Sprintf("r%d", n-1)), "all messages")
	})
	prompts := readPrompts(t, logPath)
	if len(prompts) != n {
		t.Fatalf("got %d prompts, want %d", len(prompts), n)
	}
	pids := map[int]bool{}
	for i, r := range prompts {
		pids[r.PID] = true
		if want := fmt.Sprintf("restart test %d", i); !strings.Contains(r.Prompt, want) {
			t.Errorf("prompt %d = %q, want it to contain %q", i, r.Prompt, want)
		}
	}
	if len(pids) < 3 {
		t.Errorf("prompts came from %d processes, want at least 3 (exit after 3 prompts)", len(pids))
	}
	poll.For(t, 10*time.Second, func() error {
		for {
			select {
			case c := <-exitCh:
				exits = append(exits, c)
			default:
				return poll.Want(len(exits) >= 2, "exit callbacks, have %v", len(exits))
			}
		}
	})
	for _, c := range exits {
		if c != 3 {
			t.Errorf("OnExit code = %d, want 3", c)
		}
	}
	if st := p.Status(); st.Restarts < 2 || !strings.Contains(st.LastError, "exited with code 3") {
		t.Errorf("status after restarts = %+v", st)
	}
}

func TestKilledMidQueue(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	spec.Restart = true
	p := startPane(t, spec)
	stages := newStageLog()
	const n = 12
	for i := range n {
		id := fmt.Sprintf("k%d", i)
		p.Enqueue(Delivery{MessageID: id, Content: fmt.Sprintf("(ARCH #%d): kill test %02d", i+1, i), Report: stages.reporter(id)})
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, logPath)) >= 4, "a few prompts, have %v", len(readPrompts(t, logPath)))
	})
	pid := p.Status().PID
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 60*time.Second, func() error { return poll.Want(stages.final(fmt.Sprintf("k%d", n-1)), "the rest") })
	prompts := readPrompts(t, logPath)
	// The message in flight when the agent died may be lost (typed in full
	// before the kill) but nothing repeats and order holds.
	if len(prompts) < n-1 || len(prompts) > n {
		t.Fatalf("got %d prompts, want %d or %d", len(prompts), n-1, n)
	}
	last := -1
	for _, r := range prompts {
		var k int
		if _, err := fmt.Sscanf(r.Prompt[strings.Index(r.Prompt, "kill test"):], "kill test %d", &k); err != nil {
			t.Fatalf("odd prompt %q", r.Prompt)
		}
		if k <= last {
			t.Errorf("prompt %d after %d: order broken or repeated", k, last)
		}
		last = k
	}
	if p.Status().Restarts < 1 {
		t.Error("pane did not restart")
	}
}

func TestStartupWaitsForFirstOutput(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_START_MS=700")
	// The program cannot start before this, and draws nothing for 700 ms
	// after its start. (The pane's StartedAt is taken once the start
	// returned, a moment after the program's own clock began: measured
	// from it, a typing just after the first output looked early under
	// load, 683 ms.)
	start := time.Now()
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "s1", Content: "(ARCH #1): early bird", Urgent: true, Report: stages.reporter("s1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("s1"), "delivery") })
	st := stages.get("s1")
	if st[0].Kind != StageTyped || st[0].At.Sub(start) < 700*time.Millisecond {
		t.Errorf("typed %s after the pane started, before the program's first output", st[0].At.Sub(start))
	}
	if pr := readPrompts(t, logPath); len(pr) != 1 || strings.TrimRight(pr[0].Prompt, "\n") != expectPrompt("s1", "(ARCH #1): early bird") {
		t.Errorf("prompts = %+v", pr)
	}
}

func TestEscapeSequencesNeutralised(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	// Typed inline (a multi-line paste), so the whole text reaches the program.
	spec.Timing.MultiLine, spec.Timing.MultiLineSet = true, true
	p := startPane(t, spec)
	stages := newStageLog()
	evil := "(ARCH #1): red \x1b[31mRED\x1b[0m end-paste \x1b[201~ echo pwned\r submit? \x03 ctrl-c \x9b31m c1 \x1b]0;title\x07 osc \x7f del"
	p.Enqueue(Delivery{MessageID: "e1", Content: evil, Report: stages.reporter("e1")})
	p.Enqueue(Delivery{MessageID: "e2", Content: "(ARCH #2): after", Report: stages.reporter("e2")})
	poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("e2"), "deliveries") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 2 {
		t.Fatalf("got %d prompts, want 2 (an escape must not split or end the message): %+v", len(prompts), prompts)
	}
	got := prompts[0].Prompt
	for _, bad := range []string{"\x1b", "\r", "\x03", "\x7f", "\u009b"} {
		if strings.Contains(got, bad) {
			t.Errorf("prompt contains %q: %q", bad, got)
		}
	}
	for _, want := range []string{"␛[31mRED", "␛[201~ echo pwned\n submit? ␃ ctrl-c", "[hm:e1]"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt %q lacks %q", got, want)
		}
	}
}

func TestStopWhileQueued(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t, "FAKEAGENT_BUSY_MS=60000")
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "q1", Content: "(ARCH #1): go busy", Report: stages.reporter("q1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("q1"), "first delivery") })
	p.Enqueue(Delivery{MessageID: "q2", Content: "(ARCH #2): waits", Report: stages.reporter("q2")})
	p.Enqueue(Delivery{MessageID: "q3", Content: "(ARCH #3): waits too", Report: stages.reporter("q3")})
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	left := p.Undelivered()
	if len(left) != 2 || left[0].MessageID != "q2" || left[1].MessageID != "q3" {
		t.Errorf("Undelivered = %+v", left)
	}
	if len(stages.get("q2")) != 0 {
		t.Errorf("queued message got stages %+v", stages.get("q2"))
	}
	if s := p.Status(); s.State != StateExited || s.PID != 0 {
		t.Errorf("status after stop = %+v", s)
	}
	p.Enqueue(Delivery{MessageID: "late", Content: "x"}) // must not block or panic
}

func TestPartlyTypedMessageRetypedAfterRestart(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	// First run: raw mode, bracketed paste on, never reads its input.
	// Later runs: the fake agent.
	spec.Command = "if [ -e first-run ]; then exec " + shellQuote(fakeAgent(t)) + "; fi; touch first-run; stty raw -echo; printf '\\033[?2004hstuck\\r\\n'; exec sleep 300"
	spec.Restart = true
	p := startPane(t, spec)
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "stuck"), "first run") })
	// Fill the terminal's input buffer so that typing blocks.
	ctx, cancel := contextWithTimeout(time.Second)
	n, err := p.WriteContext(ctx, make([]byte, 1<<20))
	cancel()
	if err == nil || n == 0 || n >= 1<<20 {
		t.Fatalf("filling the input buffer: wrote %d, err %v", n, err)
	}
	stages := newStageLog()
	content := "(ARCH #1):" + strings.Repeat(" retyped in full", 200)
	p.Enqueue(Delivery{MessageID: "p1", Content: content, Report: stages.reporter("p1")})
	time.Sleep(500 * time.Millisecond) // give the engine time to block in its write
	if len(stages.get("p1")) != 0 {
		t.Fatalf("message typed into a full terminal: %+v", stages.get("p1"))
	}
	if err := syscall.Kill(-p.Status().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("p1"), "delivery after restart") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 1 || strings.TrimRight(prompts[0].Prompt, "\n") != expectPrompt("p1", content) {
		t.Errorf("prompts = %+v", prompts)
	}
	// A terminal holding input its program has not read is not ready
	// (unread.go), so the message usually waits untyped for the next run;
	// where its typing had begun, the kill cut it short, and the stages
	// say so before the new typing.
	st := stages.get("p1")
	if len(st) == 3 && (st[0].Kind != StageRetyping || !errors.Is(st[0].Err, ErrPaneExited)) {
		t.Errorf("stages = %+v, want a retyping after the kill first", st)
	}
	if len(st) < 2 || len(st) > 3 || st[len(st)-2].Kind != StageTyped || st[len(st)-1].Kind != StageSubmitted {
		t.Errorf("stages = %+v, want typed and submitted last", st)
	}
}

// TestDeliveryCallbacks checks that each callback fires at the stage of its
// name: Typed once the text is in the pane and before Enter, Failed when the
// delivery reaches StageFailed.
func TestDeliveryCallbacks(t *testing.T) {
	t.Parallel()
	t.Run("typed before enter", func(t *testing.T) {
		spec, logPath := fakeSpec(t)
		p := startPane(t, spec)
		stages := newStageLog()
		var mu sync.Mutex
		var typed []int // prompts already logged each time Typed ran
		p.Enqueue(Delivery{MessageID: "t1", Content: "(ARCH #1): typed callback", Report: stages.reporter("t1"),
			Callbacks: paneevents.Callbacks{Typed: func() {
				got, err := promptlog.Read(logPath)
				if err != nil {
					t.Errorf("read prompt log: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				typed = append(typed, len(got))
			},
				Failed: func(err error) { t.Errorf("Failed(%v) for a delivered message", err) },
			},
		})
		poll.For(t, 10*time.Second, func() error { return poll.Want(stages.final("t1"), "delivery") })
		mu.Lock()
		defer mu.Unlock()
		if len(typed) != 1 || typed[0] != 0 {
			t.Errorf("Typed ran %d times with prompts logged %v; want once, before Enter (0 prompts)", len(typed), typed)
		}
		if st := stages.get("t1"); len(st) != 2 || st[0].Kind != StageTyped || st[1].Kind != StageSubmitted {
			t.Errorf("stages = %+v", st)
		}
	})
	t.Run("failed at StageFailed", func(t *testing.T) {
		spec, _ := fakeSpec(t)
		spec.PointerDir = "" // a long body needs a pointer file it cannot get
		p := startPane(t, spec)
		stages := newStageLog()
		failed := make(chan error, 2)
		p.Enqueue(Delivery{MessageID: "f1", Content: "(ARCH #1): " + strings.Repeat("x", MaxInlineBody+1), Report: stages.reporter("f1"),
			Callbacks: paneevents.Callbacks{Typed: func() { t.Error("Typed called for a message that cannot be typed") },
				Failed: func(err error) { failed <- err },
			},
		})
		select {
		case err := <-failed:
			if !errors.Is(err, ErrNoPointerDir) {
				t.Errorf("Failed(%v), want ErrNoPointerDir", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Failed not called")
		}
		if st := stages.get("f1"); len(st) != 1 || st[0].Kind != StageFailed {
			t.Errorf("stages = %+v", st)
		}
	})
	t.Run("Fail by the caller", func(t *testing.T) {
		stages := newStageLog()
		var got error
		d := Delivery{MessageID: "g1", Report: stages.reporter("g1"), Callbacks: paneevents.Callbacks{Failed: func(err error) { got = err }}}
		want := errors.New("slot ended")
		d.Fail(want)
		if got != want {
			t.Errorf("Failed got %v, want %v", got, want)
		}
		if st := stages.get("g1"); len(st) != 1 || st[0].Kind != StageFailed || st[0].Err != want || st[0].At.IsZero() {
			t.Errorf("stages = %+v", st)
		}
		Delivery{}.Fail(want) // no callbacks: must not panic
	})
}

// TestEveryEnterANewline: a program that takes every Enter as a newline in
// its input (here any Enter within a minute of other input) never gets the
// message; the pane must say stuck, never submitted. Each press adds one
// blank row under the text: the second press was judged against the screen
// from before the first, two rows up, and taken for the text leaving the
// input (the false "submitted" TestHardCase/EnterWithin150msIsNewline hit
// when load delayed the program's read of the first Enter).
func TestEveryEnterANewline(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=60000")
	spec.Timing = hardTiming(">", false, true)
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): an Enter is a newline here", Report: stages.reporter("m1")})
	poll.For(t, 20*time.Second, func() error {
		return poll.Want(stages.final("m1"), "a final stage for m1, have %v", stages.get("m1"))
	})
	got := stages.get("m1")
	if last := got[len(got)-1]; last.Kind != StageStuck {
		t.Fatalf("stages %v: want the last one stuck", got)
	}
	for _, s := range got {
		if s.Kind == StageSubmitted {
			t.Fatalf("stages %v: reported submitted, but the program took no prompt", got)
		}
	}
	settle(t, logPath)
	if prompts := readPrompts(t, logPath); len(prompts) != 0 {
		t.Fatalf("the program took %d prompts: %+v", len(prompts), prompts)
	}
}

// TestStuckTextErased: a message whose text stays at the program's input
// after both presses of Enter is reported stuck, and its text is erased
// before the next message is typed: the next prompt the program takes is
// that message alone. Before the erase, the second message was typed onto
// the first's leftover text and the program took both as one prompt.
func TestStuckTextErased(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		why  string // in m1's stuck reason
	}{
		{name: "EraseKeysClearIt", env: []string{"FAKEAGENT_NEWLINE_ENTERS=2"}, why: "erased from the input"},
		{name: "EraseKeysClearOneLine", env: []string{"FAKEAGENT_NEWLINE_ENTERS=2", "FAKEAGENT_KILL_LINE=1"}, why: "erased from the input with Backspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, append([]string{"FAKEAGENT_ECHO=1"}, tc.env...)...)
			spec.Timing = hardTiming(">", false, true)
			p := startPane(t, spec)
			stages := newStageLog()
			p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): first, left at the input", Report: stages.reporter("m1")})
			p.Enqueue(Delivery{MessageID: "m2", Content: "(ARCH #2): second, taken", Report: stages.reporter("m2")})
			poll.For(t, 30*time.Second, func() error {
				if !stages.final("m1") || !stages.final("m2") {
					return fmt.Errorf("final stages for m1 and m2, have %v and %v", stages.get("m1"), stages.get("m2"))
				}
				return nil
			})
			m1, m2 := stages.get("m1"), stages.get("m2")
			if last := m2[len(m2)-1]; last.Kind != StageSubmitted {
				t.Fatalf("m2 stages %v: want the last one submitted", m2)
			}
			settle(t, logPath)
			prompts := readPrompts(t, logPath)
			if len(prompts) != 1 {
				t.Fatalf("the program took %d prompts, want 1 (m2's): %+v", len(prompts), prompts)
			}
			if got := prompts[0].Prompt; strings.Contains(got, "first") || strings.Contains(got, "hm:m1") || !strings.Contains(got, "[hm:m2]") {
				t.Fatalf("prompt %q: want m2's text alone", got)
			}
			if last := m1[len(m1)-1]; last.Kind != StageStuck || last.Err == nil || !strings.HasSuffix(last.Err.Error(), tc.why) {
				t.Fatalf("m1 stages %v: want the last one stuck, its reason ending %q", m1, tc.why)
			}
		})
	}
}
