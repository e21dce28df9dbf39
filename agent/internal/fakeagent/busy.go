package main

import (
	"os"
	"strings"
	"time"
)

// spinnerFrames are the braille frames of Ink and Gemini CLI spinners.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinnerEvery is the time between two spinner frames.
const spinnerEvery = 80 * time.Millisecond

// discards reports whether a busy spell after each prompt throws input away
// (FAKEAGENT_SILENT_MS, FAKEAGENT_SPINNER_MS).
func (a *agent) discards() bool { return a.silent > 0 || a.spinner > 0 }

// busySpell works for the silent or spinner spell after a prompt: it reads
// and throws away all input meanwhile (rest, read before the spell began,
// included), logs what it threw away, and erases its spinner. A silent
// spell prints nothing at all. An Esc read on its own (a single-byte read,
// as Claude Code and Codex take a lone Esc) interrupts the spell: it is
// logged as {"interrupted":true,...} and the prompt comes back at once;
// busySpell then reports true.
func (a *agent) busySpell(rest []byte) (interrupted bool) {
	d, spin := a.silent, false
	if a.spinner > 0 {
		d, spin = a.spinner, true
	}
	lost := append([]byte(nil), rest...)
	end := time.NewTimer(d)
	defer end.Stop()
	var tick <-chan time.Time
	frame := 0
	if spin {
		t := time.NewTicker(spinnerEvery)
		defer t.Stop()
		tick = t.C
		a.spinFrame(frame)
	}
	for {
		select {
		case b, ok := <-a.input:
			if !ok {
				a.logDiscarded(lost)
				return false
			}
			if string(b) == "\x1b" {
				a.logDiscarded(lost)
				a.logRecord(struct {
					Interrupted bool  `json:"interrupted"`
					At          int64 `json:"at"`
					PID         int   `json:"pid"`
				}{true, time.Now().UnixMilli(), os.Getpid()})
				a.endSpell(spin)
				return true
			}
			lost = append(lost, b...)
		case <-tick:
			frame++
			a.spinFrame(frame)
		case <-end.C:
			a.logDiscarded(lost)
			a.endSpell(spin)
			return false
		}
	}
}

// endSpell erases the spinner of a spell that drew one.
func (a *agent) endSpell(spin bool) {
	if !spin {
		return
	}
	if a.tui != nil {
		a.tui.status = ""
	} else {
		a.printf("\r\x1b[K")
	}
}

// spinFrame draws spinner frame n: in place on the current row, or in a
// TUI's status row.
func (a *agent) spinFrame(n int) {
	f := spinnerFrames[n%len(spinnerFrames)] + " working…"
	if a.tui != nil {
		a.tui.status = f
		a.draw()
		return
	}
	a.printf("\r%s\x1b[K", f)
}

// restore puts the prompt whose busy spell an Esc interrupted back into
// the input (FAKEAGENT_RESTORE_ON_ESC), as Claude Code does for a turn
// interrupted before its answer, and logs {"restored":...}.
func (a *agent) restore(prompt string) {
	a.buf = append(a.buf[:0], prompt...)
	a.logRecord(struct {
		Restored string `json:"restored"`
		At       int64  `json:"at"`
		PID      int    `json:"pid"`
	}{prompt, time.Now().UnixMilli(), os.Getpid()})
	if a.tui == nil && a.echo {
		a.printf("%s", strings.ReplaceAll(prompt, "\n", "\r\n"))
	}
}
