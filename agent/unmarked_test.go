package agent

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// TestUnmarkedNeverLoses: markers that match nothing make delivery slower,
// never lossy (#32 item 9). Each program here throws input away for a
// second after every prompt, and the pane's profile recognises none of its
// screens: a CLI release that changed its screen, or a program no profile
// was written for. Echo verification and retyping must still bring every
// message to the program exactly once, intact and in order, [URGENT] ones
// included (they skip the quiet period, so they are typed into the busy
// program first).
func TestUnmarkedNeverLoses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		about   string
		profile string
		env     []string
		urgent  bool // every other message is [URGENT]
	}{
		{name: "InkSpinnerUnderClaude", profile: ProfileClaude,
			about: "an Ink TextInput program under the claude profile: a spinner none of its busy markers match for 1 s after each prompt, input thrown away",
			env:   []string{"FAKEAGENT_SPINNER_MS=1000"}},
		{name: "SilentUnderDefaultUrgent", profile: ProfileDefault, urgent: true,
			about: "a prompt_toolkit-like program under the default profile: silent and deaf for 1 s after each prompt, every other message urgent",
			env:   []string{"FAKEAGENT_SILENT_MS=1000"}},
		{name: "SpinnerUnderGeminiUrgent", profile: ProfileGemini, urgent: true,
			about: "a spinner under the gemini profile whose markers match none of it, every other message urgent",
			env:   []string{"FAKEAGENT_SPINNER_MS=1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0"}, tc.env...)
			spec, logPath := fakeSpec(t, env...)
			// The profile as it ships, with a short unmarked wait: typing
			// into the deaf program sooner is the harder case, and keeps the
			// test short.
			multi := lookupProfile(tc.profile, nil).MultiLine
			spec.Profile, spec.LogPath = tc.profile, ""
			spec.Timing = Profile{Unmarked: 500 * time.Millisecond, MultiLine: multi, MultiLineSet: true}
			msgs := hardMessages(12)
			if tc.urgent {
				msgs = everyOtherUrgent(msgs)
			}
			stages := typeBatch(t, startPane(t, spec), msgs, logPath, tc.about, t.Parallel)
			recs := readPrompts(t, logPath)
			if tc.urgent {
				recs = inQueueOrder(recs, msgs)
			}
			checkHardDelivery(t, spec, msgs, recs, stages)
		})
	}
}

// everyOtherUrgent marks every other message of msgs [URGENT] (in its
// priority tags, right after the role header).
func everyOtherUrgent(msgs []hardMsg) []hardMsg {
	for i := range msgs {
		if i%2 == 1 {
			msgs[i].content = strings.Replace(msgs[i].content, "): ", "): [URGENT] ", 1)
		}
	}
	return msgs
}

// inQueueOrder sorts the program's prompts by message number (records
// that are no message's prompt first), for a batch whose urgent messages
// jump the queue: checkHardDelivery's order check then holds only the
// exactly-once and intact checks to account.
func inQueueOrder(recs []promptRec, msgs []hardMsg) []promptRec {
	index := msgIndex(msgs)
	key := func(r promptRec) int {
		if mt := trailerRE.FindStringSubmatch(r.Prompt); mt != nil {
			if i, ok := index[mt[1]]; ok {
				return i
			}
		}
		return -1
	}
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b promptRec) int { return key(a) - key(b) })
	return out
}

// TestPromptToolkitNeverLoses types twelve messages, every other one
// [URGENT], into a real prompt_toolkit program under the default profile
// (no markers): between prompts it works for a second with its terminal
// cooked, reading nothing, so the kernel echoes what hm types as if it had
// been taken. Before hm looked at the terminal's unread input, 5 of the 12
// never reached the program (the ledger said submitted), and one reached
// it twice in one prompt. Each must reach it exactly once, intact, and no
// message may be claimed submitted while the program still had not taken
// the one before it.
func TestPromptToolkitNeverLoses(t *testing.T) {
	t.Parallel()
	python := testutil.PromptToolkitPython(t)
	script, err := filepath.Abs(filepath.Join("testdata", "ptk_prompt.py"))
	if err != nil {
		t.Fatal(err)
	}
	spec, logPath := fakeSpec(t)
	spec.Command = shellQuote(python) + " " + shellQuote(script)
	spec.Env = append(spec.Env, "PTK_LOG="+logPath, "PTK_BUSY=1")
	spec.Profile, spec.Timing, spec.LogPath = ProfileDefault, Profile{}, ""
	msgs := everyOtherUrgent(hardMessages(12))
	stages := typeBatch(t, startPane(t, spec), msgs, logPath, "a prompt_toolkit program, every other message urgent", nil)
	checkTakenOnce(t, spec, msgs, readPrompts(t, logPath), stages)
}

// checkTakenOnce checks a real program's prompts: each message taken
// exactly once, intact, alone, and not claimed submitted before the
// program took the prompt before it (a real program logs its prompt a
// moment after its screen shows it taken, so the fake's stricter "not
// before its own prompt" does not apply).
func checkTakenOnce(t *testing.T, spec Spec, msgs []hardMsg, recs []promptRec, stages *stageLog) {
	t.Helper()
	l := &limited{t: t, count: map[string]int{}}
	defer l.summary()
	index := msgIndex(msgs)
	taken := make([]int, len(msgs))
	var prevAt int64
	for _, r := range recs {
		if strings.TrimSpace(r.Prompt) == "" {
			continue
		}
		if n := len(anyTrailerRE.FindAllString(r.Prompt, -1)); n != 1 {
			l.errorf("merged", "a prompt holds %d message trailers: %.200q", n, r.Prompt)
			continue
		}
		mt := trailerRE.FindStringSubmatch(r.Prompt)
		if mt == nil {
			l.errorf("not a message", "prompt %.100q", r.Prompt)
			continue
		}
		i, ok := index[mt[1]]
		if !ok {
			l.errorf("not a message", "prompt %.100q", r.Prompt)
			continue
		}
		taken[i]++
		checkIntact(l, spec, msgs[i], i, false, strings.TrimRight(r.Prompt, "\n"))
		for _, s := range stages.get(msgs[i].id) {
			if s.Kind == StageSubmitted && s.At.UnixMilli() < prevAt {
				l.errorf("false submitted", "message %d claimed submitted %d ms before the program took the prompt before it", i, prevAt-s.At.UnixMilli())
			}
		}
		prevAt = r.At
	}
	for i, n := range taken {
		if n != 1 {
			l.errorf("not once", "message %d reached the program %d times; stages %s", i, n, stageKinds(stages.get(msgs[i].id)))
		}
	}
}

// TestTypeaheadNotTypedTwice: a message whose text did not show is typed
// again only once hm knows the input is free of the first typing (#32
// item 9). testdata/typeahead_prompt.py reads on, raw and silent, for 2 s
// after each prompt, keeping what it reads (as prompt_toolkit does while
// it finishes a prompt), then works for 6 s with its terminal cooked. The
// urgent message, typed as soon as the first prompt was taken, is kept
// unseen; the erase that follows its echo wait reaches the cooked
// terminal, whose kernel takes it for its own empty line, so the kept copy
// survives it. Typed again into the cooked terminal, the message reached
// the program twice in one prompt. Measured with prompt_toolkit 3.0.52
// (testdata/ptk_prompt.py in a bare pty that does not answer its cursor
// position query): "world" written 0.3 s after the Enter of "hello", with
// the terminal raw, then Ctrl-U with the terminal cooked, and "world" was
// the next prompt; a Ctrl-U written while still raw erased it.
func TestTypeaheadNotTypedTwice(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for this test: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "typeahead_prompt.py"))
	if err != nil {
		t.Fatal(err)
	}
	spec, logPath := fakeSpec(t)
	spec.Command = shellQuote(python) + " " + shellQuote(script)
	spec.Env = append(spec.Env, "TA_LOG="+logPath, "TA_KEEP=2", "TA_BUSY=6")
	// An echo wait longer than the program reads on after a prompt, so
	// that the erase comes once its terminal is cooked.
	spec.Profile, spec.LogPath = ProfileDefault, ""
	spec.Timing = Profile{Unmarked: 500 * time.Millisecond, EchoWait: 3 * time.Second}
	p := startPane(t, spec)
	msgs := everyOtherUrgent(hardMessages(2))
	stages := newStageLog()
	start := time.Now()
	p.Enqueue(Delivery{MessageID: msgs[0].id, Content: msgs[0].content, Report: stages.reporter(msgs[0].id)})
	poll.For(t, hardDeadline, func() error {
		return poll.Want(stages.final(msgs[0].id), "message 0 not final: stages %s", stageKinds(stages.get(msgs[0].id)))
	})
	p.Enqueue(Delivery{MessageID: msgs[1].id, Content: msgs[1].content, Report: stages.reporter(msgs[1].id)})
	waitAllFinal(t, p, stages, msgs, logPath, start.Add(hardDeadline))
	settle(t, logPath)
	checkTakenOnce(t, spec, msgs, readPrompts(t, logPath), stages)
}
