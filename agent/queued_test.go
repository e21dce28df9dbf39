package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestQueuedPromptNeverMerges: a program still initializing queues the
// prompts it is given ("Prompts will be queued") and later sends them
// joined as one — Gemini CLI did so with the session message and the first
// message under a CPU hog. With the profile's Queued line, each message
// must reach the program alone, exactly once: after hm's Enter a new
// queued line holds the pane until the program takes its queue up. Without
// it (markers that do not know the line) the messages merge: the case
// shows what the marker is for.
func TestQueuedPromptNeverMerges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		queued []string
		merges bool
	}{
		{"queued line known", []string{"Prompts will be queued"}, false},
		{"queued line unknown", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A spinner while it works, as Gemini CLI shows.
			spec, logPath := fakeSpec(t, "FAKEAGENT_QUEUE_MS=2500", "FAKEAGENT_ENTER_MS=0", "FAKEAGENT_SPINNER_MS=300")
			spec.Timing = hardTiming(">", true, true)
			spec.Timing.Screen.Queued = tc.queued
			p := startPane(t, spec)
			stages := newStageLog()
			ids := []string{"q1", "q2", "q3"}
			for i, id := range ids {
				p.Enqueue(Delivery{MessageID: id, Content: fmt.Sprintf("(ARCH #%d): message %d", i+1, i+1), Report: stages.reporter(id)})
			}
			poll.For(t, 60*time.Second, func() error {
				seen := 0
				for _, pr := range readPrompts(t, logPath) {
					for _, id := range ids {
						seen += strings.Count(pr.Prompt, Trailer(id))
					}
				}
				return poll.Want(seen >= len(ids), "%d of %d messages reached the program (stages %v)", seen, len(ids), stageKinds(stages.get("q3")))
			})
			settle(t, logPath)
			merged := false
			seen := map[string]int{}
			for _, pr := range readPrompts(t, logPath) {
				n := 0
				for _, id := range ids {
					c := strings.Count(pr.Prompt, Trailer(id))
					seen[id] += c
					n += c
				}
				merged = merged || n > 1
			}
			if merged != tc.merges {
				t.Errorf("merged = %v, want %v (prompts %+v)", merged, tc.merges, readPrompts(t, logPath))
			}
			for _, id := range ids {
				if seen[id] != 1 {
					t.Errorf("%s reached the program %d times, want 1", id, seen[id])
				}
			}
		})
	}
}
