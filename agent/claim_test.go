package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// claimPointerRE finds the file a pointer line names.
var claimPointerRE = regexp.MustCompile(`\[full message \(\d+ bytes\) in ([^\]]+)\]`)

// queuedIDs is the pane's queue as message ids.
func queuedIDs(p *Pane) []string {
	var out []string
	for _, d := range p.Undelivered() {
		out = append(out, d.MessageID)
	}
	return out
}

func claimedIDs(cs []Claimed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.MessageID
	}
	return out
}

// TestClaimTakesAndGivesBack: in a pane whose screen never shows its ready
// marker (so nothing is typed), Claim takes the claimable messages in queue
// order (urgent first), up to its max, renders them for the agent's
// context (a long body as its pointer line, the pointer file written), and
// Unclaim puts them back where they were; giving back twice does nothing.
func TestClaimTakesAndGivesBack(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t)
	spec.Timing.Screen.Ready = []string{"NEVER SHOWN"}
	p := startPane(t, spec)
	long := "(ARCH #5): " + strings.Repeat("long body ", 500)
	for _, d := range []Delivery{
		{MessageID: "a", Content: "(ARCH #1): not claimable"},
		{MessageID: "b", Content: "(ARCH #2): first\nsecond line", Claimable: true},
		{MessageID: "c", Content: "(ARCH #3): [URGENT] now", Claimable: true},
		{MessageID: "d", Content: long, Claimable: true},
		{MessageID: "e", Content: "(ARCH #6): last", Claimable: true},
	} {
		p.Enqueue(d)
	}
	if got, want := queuedIDs(p), []string{"c", "a", "b", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("queue %v, want %v", got, want)
	}
	if got := p.Claim(0, false); got != nil {
		t.Errorf("Claim(0) = %v, want nothing", got)
	}
	first := p.Claim(2, false)
	if got, want := claimedIDs(first), []string{"c", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(2) took %v, want %v", got, want)
	}
	if got, want := queuedIDs(p), []string{"a", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("queue after Claim(2) %v, want %v", got, want)
	}
	if !first[0].Urgent || first[1].Urgent {
		t.Errorf("urgency not carried: %+v", first)
	}
	if want := AgentPrefix + "(ARCH #2): first\nsecond line [hm:b]"; first[1].Text != want {
		t.Errorf("text of b %q, want %q (lines as they are, the trailer ending the last)", first[1].Text, want)
	}
	rest := p.Claim(5, false)
	if got, want := claimedIDs(rest), []string{"d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(5) took %v, want %v", got, want)
	}
	ptr := claimPointerRE.FindStringSubmatch(rest[0].Text)
	if ptr == nil || !strings.HasSuffix(rest[0].Text, " [hm:d]") || len(rest[0].Text) > 400 {
		t.Fatalf("long message not a pointer line: %.300q", rest[0].Text)
	}
	if b, err := os.ReadFile(ptr[1]); err != nil || string(b) != long {
		t.Errorf("pointer file %s: %v, %d bytes, want the message", ptr[1], err, len(b))
	}
	p.Unclaim(first[1], rest[1], first[0])
	p.Unclaim(first[0]) // twice: ignored
	p.Unclaim(Claimed{MessageID: "x"})
	if got, want := queuedIDs(p), []string{"c", "a", "b", "e"}; !slices.Equal(got, want) {
		t.Fatalf("queue after Unclaim %v, want %v (each back at its place, once)", got, want)
	}
	p.Unclaim(rest[0])
	if got, want := queuedIDs(p), []string{"c", "a", "b", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("queue after Unclaim of d %v, want %v", got, want)
	}
}

// TestClaimRacesTyping: while the pane types a queue of claimable messages
// into the fake agent, another goroutine keeps claiming from the same
// queue. Every message is delivered exactly once: typed (in the agent's
// prompt log, with its stages reported) or claimed (with no stage
// reported), never both, never neither.
func TestClaimRacesTyping(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t)
	p := startPane(t, spec)
	stages := newStageLog()
	const n = 24
	for i := range n {
		id := fmt.Sprintf("m%02d", i)
		p.Enqueue(Delivery{MessageID: id, Content: fmt.Sprintf("(ARCH #%d): message %d", i+1, i), Claimable: true,
			Urgent: i%7 == 3, Report: stages.reporter(id)})
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rand.IntN(150)) * time.Millisecond):
			}
			cs := p.Claim(1, false)
			mu.Lock()
			for _, c := range cs {
				claimed[c.MessageID]++
			}
			mu.Unlock()
		}
	}()
	settled := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		typed := 0
		for i := range n {
			if stages.final(fmt.Sprintf("m%02d", i)) {
				typed++
			}
		}
		return typed, len(claimed)
	}
	poll.For(t, 60*time.Second, func() error {
		typed, took := settled()
		return poll.Want(typed+took >= n && len(p.Undelivered()) == 0, "%d typed + %d claimed of %d", typed, took, n)
	})
	close(stop)
	<-done
	settle(t, logPath)
	inPrompts := map[string]int{}
	for _, r := range readPrompts(t, logPath) {
		if m := trailerRE.FindStringSubmatch(strings.TrimRight(r.Prompt, "\n")); m != nil {
			inPrompts[m[1]]++
		}
	}
	typed, took := 0, 0
	for i := range n {
		id := fmt.Sprintf("m%02d", i)
		c, tp, st := claimed[id], inPrompts[id], stages.get(id)
		switch {
		case c == 1 && tp == 0 && len(st) == 0:
			took++
		case c == 0 && tp == 1 && len(st) > 0 && st[len(st)-1].Kind == StageSubmitted:
			typed++
		default:
			t.Errorf("%s: claimed %d times, typed %d times, stages %v: want exactly one path", id, c, tp, st)
		}
	}
	t.Logf("%d typed, %d claimed", typed, took)
}

// TestClaimMidTurnWhileInterrupting: while an interrupt hm sent for an
// urgent message is in flight (here the program ignores it and stays busy
// to the end of its spell), a mid-turn claim (a tool or stop hook, whose
// output would join the turn the interrupt cancels) takes nothing, while a
// claim for a new prompt still may. Once the urgent message is delivered,
// mid-turn claims take again. Every message reaches the program once.
func TestClaimMidTurnWhileInterrupting(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_SPINNER_MS=6000", "FAKEAGENT_ENTER_MS=0")
	spec.Timing = hardTiming(">", true, true)
	spec.Timing.Interrupt = "\x07" // not the program's interrupt key: it stays busy
	p := startPane(t, spec)
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "n1", Content: "(ARCH #1): start working", Report: stages.reporter("n1")})
	poll.For(t, 20*time.Second, func() error { return poll.Want(stages.final("n1"), "n1 submitted") })
	p.Enqueue(Delivery{MessageID: "u1", Content: "(ARCH #2): [URGENT] stop", Report: stages.reporter("u1")})
	p.Enqueue(Delivery{MessageID: "n2", Content: "(ARCH #3): later", Claimable: true, Report: stages.reporter("n2")})
	poll.For(t, 20*time.Second, func() error {
		return poll.Want(slices.ContainsFunc(stages.get("u1"), func(s Stage) bool { return s.Kind == StageInterrupted }), "u1 interrupted")
	})
	if got := p.Claim(5, true); got != nil {
		t.Errorf("mid-turn claim during the interrupt took %v, want nothing", claimedIDs(got))
		p.Unclaim(got...)
	}
	if stages.final("u1") {
		t.Fatal("u1 delivered before the claims were tried: the spell ended too soon")
	}
	got := p.Claim(5, false)
	if !slices.Equal(claimedIDs(got), []string{"n2"}) {
		t.Errorf("claim for a new prompt during the interrupt took %v, want [n2]", claimedIDs(got))
	}
	p.Unclaim(got...)
	poll.For(t, 30*time.Second, func() error { return poll.Want(stages.final("u1"), "u1 delivered") })
	// The interrupt is over: a mid-turn claim takes n2, unless it was
	// typed first.
	var claimed []string
	poll.For(t, 30*time.Second, func() error {
		if cs := p.Claim(5, true); len(cs) > 0 {
			claimed = claimedIDs(cs)
		}
		return poll.Want(len(claimed) > 0 || stages.final("n2"), "n2 claimed or typed")
	})
	settle(t, logPath)
	count := map[string]int{}
	for _, r := range readPrompts(t, logPath) {
		if m := trailerRE.FindStringSubmatch(r.Prompt); m != nil {
			count[m[1]]++
		}
	}
	for _, id := range claimed {
		count[id]++
	}
	for _, id := range []string{"n1", "u1", "n2"} {
		if count[id] != 1 {
			t.Errorf("%s reached the program %d times (typed or claimed), want once", id, count[id])
		}
	}
}
