package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// TestEnterWhileMountingNeverMerges: a program still mounting its UI takes
// an Enter as nothing, clears its screen behind a spinner and then draws
// the text hm typed back into its input. The screen said "submitted" (busy,
// the text gone), so hm typed the next message after it and both went to
// the program as one prompt — seen with the real Gemini CLI on a loaded
// machine (the session line and the first message merged). Every message
// must reach the program alone, exactly once.
func TestEnterWhileMountingNeverMerges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		busy bool // spinner rows classify as busy
		env  []string
	}{
		{"spinner is busy", true, nil},
		{"spinner unknown", false, nil},
		{"Enter kept as a newline", true, []string{"FAKEAGENT_MOUNT_NEWLINE=1"}},
		// The prompt comes back empty and the kept text shows only once
		// the next message's first key arrives: the look at the input
		// before typing finds nothing, and the next text stands after
		// the held one (Gemini CLI under a CPU hog, in make test).
		{"text drawn back late", true, []string{"FAKEAGENT_MOUNT_HIDE=1"}},
		{"text drawn back late, Enter kept as a newline", true, []string{"FAKEAGENT_MOUNT_HIDE=1", "FAKEAGENT_MOUNT_NEWLINE=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, append([]string{"FAKEAGENT_MOUNT_MS=1500"}, tc.env...)...)
			spec.Timing = hardTiming(">", tc.busy, true)
			p := startPane(t, spec)
			stages := newStageLog()
			ids := []string{"m1", "m2", "m3"}
			for i, id := range ids {
				p.Enqueue(Delivery{MessageID: id, Content: fmt.Sprintf("(ARCH #%d): message %d", i+1, i+1), Report: stages.reporter(id)})
			}
			poll.For(t, 60*time.Second, func() error {
				for _, id := range ids {
					if !stages.final(id) {
						return fmt.Errorf("final stage for %s, have %v", id, stages.get(id))
					}
				}
				return nil
			})
			settle(t, logPath)
			prompts := readPrompts(t, logPath)
			seen := map[string]int{}
			for _, pr := range prompts {
				n := 0
				for _, id := range ids {
					c := strings.Count(pr.Prompt, Trailer(id))
					seen[id] += c
					n += c
				}
				if n != 1 {
					t.Errorf("prompt %q holds %d messages, want 1", pr.Prompt, n)
				}
			}
			for _, id := range ids {
				if seen[id] != 1 {
					t.Errorf("%s reached the program %d times, want 1 (prompts %+v)", id, seen[id], prompts)
				}
			}
		})
	}
}

// TestHeldTextEnteredWhenIdle: the only message, entered while the program
// still mounted its UI (it took the Enter as nothing and drew the text back
// into its input), must still reach it once the program is ready: with no
// next message to type, hm watches the input of an idle pane for the last
// message it entered. Before, the text stood at the input for good while
// the ledger said submitted (a loaded make test run found Gemini CLI doing
// this after an interrupt: it queued the urgent prompt and put it back).
func TestHeldTextEnteredWhenIdle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     []string
		content string
	}{
		{"Enter taken as nothing", nil, "(ARCH #1): the only message"},
		{"Enter kept as a newline", []string{"FAKEAGENT_MOUNT_NEWLINE=1"}, "(ARCH #1): the only message"},
		// Gemini CLI shows a paste of more than about 5 lines collapsed:
		// the text's trailer is not on the screen, its paste marker is.
		{"collapsed paste", []string{"FAKEAGENT_COLLAPSE_LINES=2"}, "(ARCH #1): the only message\nline 2\nline 3\nline 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, logPath := fakeSpec(t, append([]string{"FAKEAGENT_MOUNT_MS=1500"}, tc.env...)...)
			spec.Timing = hardTiming(">", true, true)
			spec.Timing.Screen.Pasted = []string{"[Pasted Text: "}
			p := startPane(t, spec)
			stages := newStageLog()
			p.Enqueue(Delivery{MessageID: "only", Content: tc.content, Report: stages.reporter("only")})
			poll.For(t, 60*time.Second, func() error {
				n := 0
				for _, pr := range readPrompts(t, logPath) {
					n += strings.Count(pr.Prompt, Trailer("only"))
				}
				return poll.Want(n > 0, "the program took the message (stages %v, screen rows %q)", stageKinds(stages.get("only")), p.Screen().Lines)
			})
			settle(t, logPath)
			n := 0
			for _, pr := range readPrompts(t, logPath) {
				n += strings.Count(pr.Prompt, Trailer("only"))
			}
			if n != 1 {
				t.Errorf("the message reached the program %d times, want 1", n)
			}
		})
	}
}

// TestHeldTextEnteredDuringHookTurn: in a pane whose CLI reports through
// hooks, hm's Enter begins a turn that holds the pane busy until a hook
// ends it (or a minute of quiet without one). An Enter the program lost
// (it was mounting its UI, then drew the text back into its input) began
// such a turn too, and the next message waited the minute while the text
// stood at the input — the real Gemini CLI resuming its session did this
// in make test. The held text must be entered again while the turn
// holds, not after the turn was given up for want of a hook (which the
// pane logs).
func TestHeldTextEnteredDuringHookTurn(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_MOUNT_MS=1500")
	spec.Timing = hardTiming(">", true, true)
	logs := &testutil.SyncBuffer{}
	p := startPaneLogged(t, spec, slog.New(slog.NewTextHandler(logs, nil)))
	p.ReportHookState(StateReady) // its hooks are wired: the pane is hooked
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "h1", Content: "(ARCH #1): entered while mounting", Report: stages.reporter("h1")})
	p.Enqueue(Delivery{MessageID: "h2", Content: "(ARCH #2): the next one", Report: stages.reporter("h2")})
	poll.For(t, time.Minute, func() error {
		n := 0
		for _, pr := range readPrompts(t, logPath) {
			n += strings.Count(pr.Prompt, Trailer("h1"))
		}
		return poll.Want(n > 0, "h1 reached the program (stages %v, screen %q)", stageKinds(stages.get("h1")), p.Screen().Lines)
	})
	if strings.Contains(logs.String(), "taken as over (no turn-end hook came)") {
		t.Errorf("h1 was entered again only after the turn was given up:\n%s", logs.String())
	}
}
