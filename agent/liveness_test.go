package agent

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// livenessProfile reads the fake agent's screen: its prompt, its spinner,
// its dialog.
func livenessProfile() map[string]Profile {
	return map[string]Profile{"fakecli": {Screen: Markers{Ready: []string{">"}, Busy: spinners, Blocked: []string{"Do you want to proceed?"}}}}
}

// livenessPane starts the fake agent with env under livenessProfile.
func livenessPane(t *testing.T, env ...string) (*Pane, string) {
	t.Helper()
	spec, logPath := fakeSpec(t, env...)
	spec.Profile, spec.Profiles = "fakecli", livenessProfile()
	return startPane(t, spec), logPath
}

// wantState polls p until its State is want.
func wantState(t *testing.T, p *Pane, want State, step string) {
	t.Helper()
	poll.For(t, 8*time.Second, func() error {
		st := p.Status()
		return poll.Want(st.State == want, "%s: state %q (readiness %q), want %q", step, st.State, st.Readiness, want)
	})
}

// TestLivenessStates: a pane's State follows its screen (a dialog is
// waiting_for_human, a spinner busy, a quiet prompt ready) and the states
// its CLI's hooks report (TestHookTurnIsBusy: a turn).
func TestLivenessStates(t *testing.T) {
	t.Parallel()
	type step struct {
		hook    State  // reported by a hook, if set
		enqueue string // a message enqueued, if set
		want    State
	}
	cases := []struct {
		name  string
		env   []string
		steps []step
	}{
		{"dialog, then its prompt", []string{"FAKEAGENT_DIALOG_MS=1500"}, []step{
			{want: StateWaitingForHuman}, {want: StateReady}}},
		{"spinner after a prompt", []string{"FAKEAGENT_SPINNER_MS=1500"}, []step{
			{want: StateReady}, {enqueue: "work", want: StateBusy}, {want: StateReady}}},
		{"hooks on a quiet prompt", nil, []step{
			{want: StateReady},
			{hook: StateBusy, want: StateBusy},
			{hook: StateWaitingForHuman, want: StateWaitingForHuman},
			{hook: StateReady, want: StateReady}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, logPath := livenessPane(t, c.env...)
			for i, s := range c.steps {
				if s.hook != "" {
					p.ReportHookState(s.hook)
				}
				if s.enqueue != "" {
					p.Enqueue(Delivery{MessageID: s.enqueue, Content: "(ARCH #1): " + s.enqueue})
					poll.For(t, 8*time.Second, func() error {
						return poll.Want(len(readPrompts(t, logPath)) > 0, "step %d: %s typed", i, s.enqueue)
					})
				}
				wantState(t, p, s.want, "step "+string(rune('0'+i)))
			}
		})
	}
}

// TestHookTurnIsBusy: between the hook that says a turn runs (a prompt
// submitted) and the one that says it ended, the pane is busy whatever its
// screen shows, for Status and for the typing alike: the program's prompt
// back on the screen after its spinner (Claude between two steps of a
// turn) neither makes hm status say ready nor lets a message be typed.
// Each path that really ends a turn ends it: the turn-end hook, a
// person's Esc (a cancelled turn may run no stop hook), hm's own interrupt
// for an [URGENT] message, and the program's exit (the restarted run
// begins with no turn). Before the fix the screen changing class dropped
// the hook's word: the pane read ready on the quiet prompt and the second
// message was typed into the running turn.
func TestHookTurnIsBusy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		end  func(t *testing.T, p *Pane, stages *stageLog) (typed []string)
	}{
		{"turn-end hook", func(t *testing.T, p *Pane, _ *stageLog) []string {
			p.ReportHookState(StateReady)
			return []string{"m2"}
		}},
		{"person's Esc", func(t *testing.T, p *Pane, _ *stageLog) []string {
			if _, err := p.Write([]byte("\x1b")); err != nil {
				t.Fatal(err)
			}
			return []string{"m2"}
		}},
		{"hm's interrupt", func(t *testing.T, p *Pane, stages *stageLog) []string {
			p.Enqueue(Delivery{MessageID: "u3", Content: "(ARCH #3): [URGENT] now", Urgent: true, Report: stages.reporter("u3")})
			poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("u3"), "u3 submitted") })
			p.ReportHookState(StateReady) // u3's turn ends (TestEnteredPromptStartsHookTurn)
			return []string{"m2"}
		}},
		{"program exit", func(t *testing.T, p *Pane, _ *stageLog) []string {
			if err := syscall.Kill(p.Status().PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return []string{"m2"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, "FAKEAGENT_SPINNER_MS=600")
			spec.Profile, spec.Profiles = "fakecli", livenessProfile()
			spec.Timing.Interrupt, spec.Restart = "\x1b", true
			p := startPane(t, spec)
			wantState(t, p, StateReady, "start")
			stages := newStageLog()
			p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): first", Report: stages.reporter("m1")})
			poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("m1"), "m1 submitted") })
			p.ReportHookState(StateBusy) // the prompt-submit hook
			p.Enqueue(Delivery{MessageID: "m2", Content: "(ARCH #2): second", Report: stages.reporter("m2")})
			// The spinner ends and the prompt shows, quiet: still busy.
			poll.For(t, 20*time.Second, func() error {
				st := p.Status()
				return poll.Want(strings.HasPrefix(st.Readiness, Ready.String()) && time.Since(st.LastActivity) > 2*p.Profile().Idle,
					"the prompt back on a quiet screen, status %+v", st)
			})
			for range 10 {
				if st := p.Status(); st.State != StateBusy {
					t.Fatalf("state %q on the prompt while a hook's turn runs, want busy", st.State)
				}
				if got := readPrompts(t, logPath); len(got) != 1 {
					t.Fatalf("%d prompts while the turn runs, want only the first: %+v", len(got), got)
				}
				time.Sleep(p.Profile().Idle)
			}
			for _, id := range tc.end(t, p, stages) {
				poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final(id), "%s typed once the turn ended", id) })
			}
		})
	}
}

// TestLivenessHoldsMessages: while a hook says the agent waits for a person
// (its screen shows no dialog the profile knows), neither a normal nor an
// [URGENT] message is typed: typing would answer the agent's question.
// Status.Waiting says why; both go in once a hook says the agent went on.
func TestLivenessHoldsMessages(t *testing.T) {
	t.Parallel()
	for _, urgent := range []bool{false, true} {
		t.Run(map[bool]string{false: "normal", true: "urgent"}[urgent], func(t *testing.T) {
			t.Parallel()
			p, logPath := livenessPane(t)
			wantState(t, p, StateReady, "start")
			p.ReportHookState(StateWaitingForHuman)
			stages := newStageLog()
			p.Enqueue(Delivery{MessageID: "held", Content: "(ARCH #1): held", Urgent: urgent, Report: stages.reporter("held")})
			poll.For(t, 8*time.Second, func() error {
				st := p.Status()
				return poll.Want(st.Waiting == WaitingForHuman && st.Queued == 1 && st.State == StateWaitingForHuman, "held, status %+v", st)
			})
			if got := readPrompts(t, logPath); len(got) != 0 || len(stages.get("held")) != 0 {
				t.Fatalf("typed while the agent waits for a person: %+v %+v", got, stages.get("held"))
			}
			p.ReportHookState(StateReady)
			poll.For(t, 8*time.Second, func() error { return poll.Want(stages.final("held"), "delivered once ready") })
			got := readPrompts(t, logPath)
			if len(got) != 1 || !strings.Contains(got[0].Prompt, "held") {
				t.Fatalf("prompts %+v", got)
			}
			if st := p.Status(); st.Waiting != "" {
				t.Errorf("Waiting = %q after delivery", st.Waiting)
			}
		})
	}
}

func TestParseHookState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in string
		ok bool
	}{{"ready", true}, {"busy", true}, {"waiting_for_human", true}, {"exited", false}, {"starting", false}, {"", false}} {
		if _, err := ParseHookState(c.in); (err == nil) != c.ok {
			t.Errorf("ParseHookState(%q) = %v", c.in, err)
		}
	}
}

// TestEnteredPromptStartsHookTurn: in a pane whose program reports through
// hooks, a prompt hm entered is a turn until the turn-end hook, so the next
// message waits for it even though the screen is back at a quiet prompt.
// Gemini CLI queues prompts submitted while it initializes or works and
// sends them joined as one (its prompt-submit hook fires only then): the
// real-CLI suite saw two messages typed one after the other reach its
// model as one prompt.
func TestEnteredPromptStartsHookTurn(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	spec.Profile, spec.Profiles = "fakecli", livenessProfile()
	p := startPane(t, spec)
	wantState(t, p, StateReady, "start")
	p.ReportHookState(StateReady) // its hooks run (a SessionStart, an earlier turn's end)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "m1", Content: "(ARCH #1): first", Report: stages.reporter("m1")})
	p.Enqueue(Delivery{MessageID: "m2", Content: "(ARCH #2): second", Report: stages.reporter("m2")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("m1"), "m1 submitted") })
	// No hook yet: m1 may still be queued inside the CLI.
	for range 10 {
		if st := p.Status(); st.State != StateBusy {
			t.Fatalf("state %q after hm entered a prompt and before its turn ended, want busy", st.State)
		}
		if got := readPrompts(t, logPath); len(got) != 1 || len(stages.get("m2")) != 0 {
			t.Fatalf("m2 typed before m1's turn ended: prompts %+v, m2 stages %v", got, stages.get("m2"))
		}
		time.Sleep(2 * p.Profile().Idle)
	}
	p.ReportHookState(StateBusy)  // the prompt-submit hook
	p.ReportHookState(StateReady) // the turn-end hook
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("m2"), "m2 typed once the turn ended") })
	if got := readPrompts(t, logPath); len(got) != 2 {
		t.Fatalf("prompts %+v, want m1 and m2 apart", got)
	}
}
