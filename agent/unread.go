package agent

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// Unread input is the witness of a program that does not read: bytes hm
// wrote into the terminal that the program has not read yet. The kernel
// holds them in the terminal's input queue, and, where the terminal is
// canonical, echoes them as if they had been taken, so that neither the
// screen nor the echo check can tell a busy program that reads nothing
// (a prompt_toolkit program working between two prompts, with its terminal
// cooked) from one that took the text. While a run has unread input it is
// not ready for more (judgeLocked), a typing whose echo did not show is
// not typed again, and a press of Enter is not judged (nor pressed again)
// until the program has read what it has.

// unread returns how many bytes written into run pr's terminal its
// program has not read (where the terminal is canonical: in complete
// lines), or -1 when that cannot be told (the run ended, the terminal
// could not be opened).
func (pr *proc) unread() int {
	if pr.isExited() {
		return -1
	}
	return pr.inputQueue()
}

// exitUnread is, for a run that ended, how many bytes hm wrote that its
// program never read, once the run's master closed (see closeMaster); -1
// while it runs (ended may also mean the pane stops) or when that could
// not be told.
func (pr *proc) exitUnread() int {
	if !pr.isExited() {
		return -1
	}
	t := time.NewTimer(drainTimeout + time.Second) // runProc closes it after at most drainTimeout
	defer t.Stop()
	select {
	case <-pr.closed:
		return pr.unreadAtClose
	case <-t.C:
		return -1
	}
}

// inputQueue is unread's question, also after the program exited (the
// terminal's input queue outlives its readers while the master is open):
// -1 when it cannot be told.
func (pr *proc) inputQueue() int {
	if pr.ttyPath == "" {
		return -1
	}
	// The slave side is opened for the one question and closed again: a
	// descriptor hm kept would stop the master's reads from ending (EIO)
	// when the program and its children have closed theirs.
	fd, err := unix.Open(pr.ttyPath, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(fd)
	// Linux hands a write into the master to the terminal's line
	// discipline a moment later, from a kernel worker: asked right after
	// hm's Enter, the count could be 0 with the Enter not in it yet, and
	// the screen of a program that never read it (one exiting then) was
	// taken for its submission. A poll for input flushes that work first.
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	n, err := unix.IoctlGetInt(fd, ioctlInputQueue)
	if err != nil {
		return -1
	}
	return n
}

// drainWait bounds how long a typing waits for its program to read what
// hm wrote before the message is reported unverified: the program may be
// busy for long, and the text waits for it in the terminal either way.
const drainWait = time.Minute

// drainPoll is how often a wait for unread input to be read looks again
// (reading makes no output of its own).
const drainPoll = 20 * time.Millisecond

// waitDrained waits until run pr has read all hm wrote into its terminal,
// at most d. drained is false when the wait ended first (ended: the run
// ended, or the pane stops).
func (p *Pane) waitDrained(pr *proc, d time.Duration) (drained, ended bool) {
	deadline := time.Now().Add(d)
	for {
		if pr.unread() <= 0 {
			return !pr.isExited(), pr.isExited()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, false
		}
		if !p.pause(pr, min(left, drainPoll), nil) {
			return false, true
		}
	}
}

// waitEchoed waits for typed text to show at the program's input (cond).
// A program that has not read the text yet is waited for, inputMu
// released meanwhile (unlock, relock) so that a person's keys are not held
// up, and its screen judged again once it read it; a person's keys typed
// meanwhile make the screen no proof (not shown).
func (p *Pane) waitEchoed(pr *proc, it *item, unlock, relock func(), cond func(Screen) bool) (shown, ended bool) {
	d := patience(p.profile.echoWait(), it.unseen)
	shown, ended = p.waitScreen(pr, d, cond)
	if shown || ended || pr.unread() <= 0 {
		return shown, ended
	}
	unlock()
	drained, ended := p.waitDrained(pr, drainWait)
	relock()
	if !drained || p.personTypedAfterHM() {
		return false, ended
	}
	return p.waitScreen(pr, d, cond)
}

// silentPatience is how many screen waits a program that read what hm
// entered but drew nothing since is given to draw its first output.
const silentPatience = 4

// waitSilent gives a program that read what hm entered and drew nothing
// since (start, the output signal of the Enter, still open) time to draw:
// on a loaded machine its redraw comes after the screen wait, and an
// Enter pressed again then goes into a program busy with the text. Its
// first output, within silentPatience waits of d, is judged by taken.
// A program that drew something was judged on it already: false.
func (p *Pane) waitSilent(pr *proc, start <-chan struct{}, d time.Duration, taken func(Screen) bool) (ok, ended bool) {
	select {
	case <-start:
		return false, false
	default:
	}
	if !p.pauseOutput(pr, silentPatience*d, start, nil, nil) {
		return false, true
	}
	select {
	case <-start:
		return p.waitScreen(pr, d, taken)
	default:
		return false, false // still nothing drawn: the Enter was lost
	}
}

// waitTaken waits for the program to take what hm entered: cond on the
// screen, and nothing hm wrote left unread in the terminal. A program
// that has not read it when the screen wait ends is waited for (up to
// drainWait), not pressed Enter again, and judged once it read it;
// unread is true when it never did.
func (p *Pane) waitTaken(pr *proc, d time.Duration, cond func(Screen) bool) (ok, ended, unread bool) {
	// after is the output signal current when the program was last seen
	// with input unread: only a screen drawn after that counts, since what
	// the screen showed before the program read its input (a canonical
	// terminal's echo of the text and its newline) says nothing of it.
	var after <-chan struct{}
	p.mu.Lock()
	start := p.outChanged
	p.mu.Unlock()
	taken := func(Screen) bool {
		if pr.unread() > 0 {
			p.mu.Lock()
			after = p.outChanged
			p.mu.Unlock()
			return false
		}
		if after != nil {
			select {
			case <-after:
			default:
				return false
			}
		}
		// Drawn after the checks above; and the program still runs after
		// it, so that the count above was its terminal's: one that ended
		// meanwhile may have left the Enter unread while its last screen
		// (its parting words under the text) looks like a submission.
		return cond(p.Screen()) && pr.running()
	}
	ok, ended = p.waitScreen(pr, d, taken)
	if !ok && !ended && pr.unread() <= 0 {
		ok, ended = p.waitSilent(pr, start, d, taken)
	}
	if ok || ended || pr.unread() <= 0 {
		return ok, ended, false
	}
	drained, ended := p.waitDrained(pr, drainWait)
	if !drained {
		return false, ended, !ended
	}
	ok, ended = p.waitScreen(pr, d, taken)
	return ok, ended, false
}

// Where a key goes decides what it can erase. Written while the terminal
// is canonical, an erase key (Ctrl-U, Backspace) is the kernel's line
// editor's: it erases the line the kernel holds and never reaches the
// program. Written while the terminal is raw, it reaches the program,
// after whatever the program read before it. So a typing the program read
// while its terminal was raw and did not show (prompt_toolkit reads on
// while it finishes a prompt and keeps those keys for the next one, then
// works with its terminal cooked) is out of reach of an erase the kernel
// took: typed again, the message reached the program twice in one prompt.

// inputMode is the terminal's mode around one write into it.
type inputMode int

const (
	// modeChanged: the terminal's mode changed around the write (or could
	// not be read): where its bytes went is not known.
	modeChanged inputMode = iota
	// modeCanonical: canonical before and after the write: the kernel's
	// line editor took its bytes.
	modeCanonical
	// modeRaw: raw before and after the write: its bytes go to the
	// program, after what it read before.
	modeRaw
)

// writeNoting writes b into run pr's terminal as writeTo does and reports
// the terminal's mode around the write. The kernel handles a write a
// moment after it returns: a program that switches its terminal's mode
// within that moment is not seen.
func (p *Pane) writeNoting(ctx context.Context, pr *proc, b []byte) (int, inputMode, error) {
	before := pr.canonical()
	n, err := p.writeTo(ctx, pr, b)
	after := pr.canonical()
	switch {
	case pr.isExited() || before != after:
		return n, modeChanged, err
	case before:
		return n, modeCanonical, err
	}
	return n, modeRaw, err
}

// erases reports whether an erase key written in mode e reaches a typing
// written in mode typed: always when it went to the program (it reads the
// key after the typing, wherever the typing went), and when the kernel
// took it only if the kernel took the typing too.
func (e inputMode) erases(typed inputMode) bool {
	return e == modeRaw || e == modeCanonical && typed == modeCanonical
}
