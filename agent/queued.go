package agent

import (
	"strings"
	"time"
)

// A program may queue a prompt it is given instead of taking it up: Gemini
// CLI, still initializing (or waiting for its MCP servers), says "Prompts
// will be queued", clears its input and later sends every queued prompt
// to the model joined as one. The text left the input, so the screen said
// "submitted"; typing the next message then queued it too, and both
// reached the model in one prompt (make test under a CPU hog, hook-wired
// Gemini: the session message and the first message). So a new queued
// line (Profile.Screen.Queued) after hm's Enter holds the pane busy until
// the program shows a busy marker: it took its queue up. The line may be
// drawn late on a loaded machine (after the screen stood still for the
// quiet period), so in a program that can queue, every Enter holds the
// pane until a busy screen says the prompt was taken up, for at most
// queuedTakeUp when no queued line showed.

// queuedPrompt is what hm knows of a prompt it entered into a program that
// queues prompts.
type queuedPrompt struct {
	run   *proc
	base  int       // queued lines on the screen before the Enter
	armed time.Time // when the Enter was pressed
	since time.Time // when a new one showed; zero while none did
}

// queuedMax bounds how long after an Enter the screen is watched for a
// queued line, and how long a queued prompt holds the pane without the
// program ever showing a busy marker.
const queuedMax = 2 * time.Minute

// queuedTakeUp bounds the hold after an Enter when no queued line showed
// and no busy screen came (a program that answered without drawing one).
const queuedTakeUp = 10 * time.Second

// queuedLines counts the rows of s that show one of the profile's Queued
// lines.
func (p Profile) queuedLines(s Screen) int {
	n := 0
	for _, l := range s.Lines {
		for _, m := range p.Screen.Queued {
			if m != "" && strings.Contains(l, m) {
				n++
				break
			}
		}
	}
	return n
}

// armQueued records, as hm is about to press Enter for a prompt in run pr,
// how many queued lines the screen shows, so that a new one says this
// prompt was queued.
func (p *Pane) armQueued(pr *proc) {
	if len(p.profile.Screen.Queued) == 0 {
		return
	}
	n := p.profile.queuedLines(p.Screen())
	p.mu.Lock()
	p.queued = queuedPrompt{run: pr, base: n, armed: time.Now()}
	p.queueWatch.Store(true) // handleOutput looks at every output now
	p.mu.Unlock()
}

// noteQueuedLocked updates the queued prompt from run pr's screen (every
// output while watched, see handleOutput, and every judgment), of class
// screen and showing n queued lines: a busy screen says the program took
// the prompt (or its queue) up; a new queued line says it queued it; after
// queuedMax the watch ends either way. p.mu is held.
func (p *Pane) noteQueuedLocked(pr *proc, screen Readiness, n int, now time.Time) {
	q := &p.queued
	switch {
	case q.run != pr:
		return
	case screen == Busy:
	case q.since.IsZero() && n > q.base:
		q.since = now
		p.log.Info("the program queued the prompt hm entered (it sends its queue later, joined): nothing more is typed until it takes the queue up")
		return
	case now.Sub(q.armed) < queuedMax:
		return
	case !q.since.IsZero():
		p.log.Warn("the program queued a prompt and showed no busy marker since; taken as taken up", "waited", now.Sub(q.since).Round(time.Second))
	}
	*q = queuedPrompt{}
	p.queueWatch.Store(false)
}

// queuedHoldsLocked reports whether a prompt hm entered into run pr may
// wait in the program's queue: a queued line showed, or, for queuedTakeUp
// after the Enter, no busy screen has yet. p.mu is held.
func (p *Pane) queuedHoldsLocked(pr *proc, now time.Time) bool {
	q := p.queued
	return q.run == pr && (!q.since.IsZero() || now.Sub(q.armed) < queuedTakeUp)
}
