package agent

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// People first (issue #15): while a person in attach has typed into a pane
// within Spec.PersonQuiet, or left a line half typed there, hm does not
// type; a message never completes or submits a person's line.

// WaitingForPerson is Status.Waiting while the delivery engine holds a
// message back for a person in attach.
const WaitingForPerson = "waiting for the person in attach"

// errPersonFirst refuses hm's typing while a person holds the input.
var errPersonFirst = errors.New("a person is typing in attach; hm does not type now")

// personState is what people attached to a pane typed. Guarded by Pane.mu.
type personState struct {
	at      time.Time     // the last key a person typed reached the terminal
	proc    *proc         // the run line belongs to
	line    personLine    // that run's input line, as far as their keys tell
	changed chan struct{} // closed and replaced on every key
	// typedOut is the output signal (Pane.outChanged) current when their
	// last key that changed a pending line was written: closed once the
	// program drew after it (holdPersonEnter). Nil when no line is pending.
	typedOut <-chan struct{}
}

// personLine models a program's input line from a person's keys alone:
// characters typed and not erased since their last Enter, Ctrl-C or Ctrl-U,
// and whether a key since then may have filled it (a history recall). It
// errs on the side of a pending line: a key whose effect it cannot know
// (Ctrl-W, Esc Esc, a menu) leaves it as it was, so hm waits until the
// person presses Enter, Ctrl-C or Ctrl-U, or the program restarts.
type personLine struct {
	runes  int
	unsure bool
}

// pending reports a line the person left half typed.
func (l personLine) pending() bool { return l.runes > 0 || l.unsure }

// keyEdit is what one key does to the input line.
type keyEdit int

const (
	editNone   keyEdit = iota // a key that moves, completes (Tab) or interrupts
	editText                  // a character typed (or pasted)
	editErase                 // Backspace
	editClear                 // Ctrl-C, Ctrl-U: the line is gone
	editSubmit                // Enter: the line is submitted (and gone)
	editRecall                // Up or Down: history may fill the line
)

func (l *personLine) apply(e keyEdit) {
	switch e {
	case editText:
		l.runes++
	case editErase:
		l.runes = max(0, l.runes-1)
	case editClear, editSubmit:
		*l = personLine{}
	case editRecall:
		l.unsure = true
	}
}

// keyScanner reads what one viewer sends into a pane: it tells key presses
// from the answers the viewer's terminal gives to the program's queries
// (cursor position, device attributes, colours, focus and mouse reports),
// which are not typing, and what each key does to the input line. Its
// state carries across writes; it is not safe for concurrent use.
type keyScanner struct {
	state  int
	osc    bool   // the string ends at BEL too
	params []byte // CSI parameter and intermediate bytes (the first 32)
	paste  bool   // inside a bracketed paste: everything is text
	skip   int    // raw bytes of an X10 mouse report still to skip
}

const (
	ksGround = iota
	ksEsc
	ksCSI
	ksSS3
	ksString // OSC, DCS, SOS, PM or APC body
	ksStrEsc // ESC inside a string (possible ST)
)

// feed scans one write. Its edits go to line (nil: the keys answer a dialog
// and leave the input line alone). It reports whether b held a key press.
func (k *keyScanner) feed(b []byte, line *personLine) (keys bool) {
	edit := func(e keyEdit) {
		keys = true
		if line != nil {
			line.apply(e)
		}
	}
	for _, c := range b {
		k.step(c, edit)
	}
	if k.state == ksEsc { // a lone Esc ends the read: the Esc key
		k.state = ksGround
		edit(editNone)
	}
	return keys
}

// submitAt returns where in b the first key that submits the line (an
// Enter) begins, scanned from k's state, which it leaves as it was; -1
// when b holds none. A key begun in an earlier write begins at 0.
func (k *keyScanner) submitAt(b []byte) int {
	c := *k
	c.params = append([]byte(nil), k.params...)
	at, start := -1, 0
	for i, ch := range b {
		if c.state == ksGround && c.skip == 0 {
			start = i
		}
		c.step(ch, func(e keyEdit) {
			if e == editSubmit && at < 0 {
				at = start
			}
		})
		if at >= 0 {
			return at
		}
	}
	return -1
}

// step scans one byte.
func (k *keyScanner) step(c byte, edit func(keyEdit)) {
	if k.skip > 0 {
		k.skip--
		return
	}
	switch k.state {
	case ksGround:
		k.ground(c, edit)
	case ksEsc:
		k.esc(c, edit)
	case ksCSI:
		switch {
		case c >= 0x40 && c <= 0x7e:
			k.state = ksGround
			k.csi(c, edit)
		case c == 0x1b:
			k.state = ksEsc
		case len(k.params) < 32:
			k.params = append(k.params, c)
		}
	case ksSS3:
		k.state = ksGround
		if c == 'A' || c == 'B' {
			edit(editRecall)
		} else {
			edit(editNone)
		}
	case ksString:
		switch {
		case c == 0x07 && k.osc:
			k.state = ksGround
		case c == 0x1b:
			k.state = ksStrEsc
		}
	case ksStrEsc:
		switch c {
		case '\\':
			k.state = ksGround
		case 0x1b:
		default:
			k.state = ksString
		}
	}
}

func (k *keyScanner) ground(c byte, edit func(keyEdit)) {
	switch {
	case c == 0x1b:
		k.state = ksEsc
	case c >= 0x80 && c < 0xc0:
		// A UTF-8 continuation byte: its character was counted.
	case k.paste:
		edit(editText) // a line break in a paste is text, not Enter
	case c == '\r' || c == '\n':
		edit(editSubmit)
	case c == 0x03 || c == 0x15:
		edit(editClear)
	case c == 0x7f || c == 0x08:
		edit(editErase)
	case c == 0x16 || c == 0x19:
		edit(editRecall) // Ctrl-V (an image paste in Claude Code), Ctrl-Y (yank)
	case c < 0x20:
		edit(editNone)
	default:
		edit(editText)
	}
}

func (k *keyScanner) esc(c byte, edit func(keyEdit)) {
	switch c {
	case '[':
		k.state, k.params = ksCSI, k.params[:0]
	case 'O':
		k.state = ksSS3
	case ']':
		k.state, k.osc = ksString, true
	case 'P', 'X', '^', '_':
		k.state, k.osc = ksString, false
	case 0x1b:
		edit(editNone) // Esc, then another sequence
	default:
		// Alt+key; Alt+Enter is a newline in the line, not a submit.
		k.state = ksGround
		edit(editNone)
	}
}

// csi classifies a complete control sequence.
func (k *keyScanner) csi(final byte, edit func(keyEdit)) {
	params := string(k.params)
	if params != "" && strings.IndexByte("<=>?", params[0]) >= 0 {
		return // a report (device attributes, modes, kitty flags) or an SGR mouse event
	}
	switch final {
	case 'M':
		if params == "" {
			k.skip = 3 // an X10 mouse report
		}
	case '~':
		switch params {
		case "200":
			k.paste = true
		case "201":
			k.paste = false
		}
		edit(editNone) // Insert, Delete, Page Up/Down, F5 and up, paste marks
	case 'A', 'B':
		edit(editRecall)
	case 'C', 'D', 'E', 'F', 'H', 'P', 'Q', 'S', 'Z':
		edit(editNone)
	case 'u':
		edit(kittyKey(params))
	}
	// Anything else (R: cursor position, c, n, t, I and O: focus, y...) is
	// the terminal reporting, not a person typing.
}

// kittyKey reads a key of the kitty keyboard protocol, "code;mods:event u",
// which a program may switch on (then Ctrl-C arrives as "99;5u"). A
// release event edits nothing (it still counts as a key: it follows one).
func kittyKey(params string) keyEdit {
	code, rest, _ := strings.Cut(params, ";")
	code, _, _ = strings.Cut(code, ":")
	rest, _, _ = strings.Cut(rest, ";")
	m, ev, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(code)
	if err != nil {
		return editNone
	}
	mods := 1
	if v, err := strconv.Atoi(m); err == nil && v > 0 {
		mods = v
	}
	if ev == "3" {
		return editNone
	}
	bits := mods - 1 // shift 1, alt 2, ctrl 4
	switch {
	case n == 13 && bits == 0:
		return editSubmit
	case bits == 4 && (n == 'c' || n == 'u'):
		return editClear
	case (n == 127 || n == 8) && bits == 0:
		return editErase
	case n >= 32 && n != 127 && bits&^1 == 0 && (n < 0xe000 || n > 0xf8ff):
		return editText
	}
	return editNone
}

// typeFromViewer types a viewer's bytes into the pane, as WriteContext
// does, and records the person's keys (keys is the viewer's own scanner).
// Keys typed while the screen shows a dialog (the profile's blocked
// markers) answer it and leave the input line alone. An Enter is written
// on its own, once the program drew the line before it (holdPersonEnter).
func (p *Pane) typeFromViewer(ctx context.Context, keys *keyScanner, b []byte) (int, error) {
	dialog := false
	if len(p.profile.Screen.Blocked) > 0 {
		r, _ := p.profile.Classify(p.Screen())
		dialog = r == Blocked
	}
	note := func(pr *proc, written []byte) { p.notePerson(pr, keys, written, dialog) }
	at := -1
	if !dialog {
		at = keys.submitAt(b)
	}
	if at < 0 {
		return p.writeInput(ctx, b, note)
	}
	n := 0
	if at > 0 {
		var err error
		if n, err = p.writeInput(ctx, b[:at], note); err != nil {
			return n, err
		}
	}
	p.holdPersonEnter()
	m, err := p.writeInput(ctx, b[at:], note)
	return n + m, err
}

// personEnterWait bounds how long a person's Enter waits for the program
// to read and draw what they typed before it (holdPersonEnter).
const personEnterWait = 2 * time.Second

// holdPersonEnter holds a person's Enter until the program has read the
// line they typed and drawn since (at most personEnterWait), and then, if
// it had to wait, the profile's EnterDelay, the pause hm keeps before its
// own Enter. A TUI that reads the Enter with the text, or before it drew
// the text, may submit the line as it last drew it and lose the rest:
// Gemini CLI 0.61 submits its input as of its last render and then clears
// it, so on a loaded machine a person's last keys were lost ("the person
// at the keyboard sa" reached the model); or it takes an Enter read close
// behind a key as a newline. Where the terminal is canonical the kernel
// edits the line: nothing is held. The caller holds no lock; the hold is
// bounded, so it takes no context.
func (p *Pane) holdPersonEnter() {
	p.mu.Lock()
	pr, ps := p.proc, p.person
	p.mu.Unlock()
	if pr == nil || ps.proc != pr || ps.typedOut == nil || pr.canonical() {
		return
	}
	t0 := time.Now()
	drawn, held := ps.typedOut, false
	for {
		unread := pr.unread()
		if unread > 0 { // only a drawing after it read the line counts
			p.mu.Lock()
			drawn = p.outChanged
			p.mu.Unlock()
		}
		select {
		case <-drawn:
			if unread <= 0 {
				if held {
					p.log.Debug("held a person's Enter until the program drew their line", "for", time.Since(t0))
					p.pause(pr, p.profile.enterDelay(false), nil)
				}
				return
			}
		default:
		}
		left := personEnterWait - time.Since(t0)
		if left <= 0 {
			p.log.Debug("a person's Enter goes in before the program drew their line", "unread", unread)
			return
		}
		held = true
		if !p.pauseOutput(pr, min(left, drainPoll), drawn, nil, nil) {
			return
		}
	}
}

// notePerson records bytes a viewer wrote into run pr. The caller holds
// inputMu, so hm's own typing sees them before its next write.
func (p *Pane) notePerson(pr *proc, keys *keyScanner, b []byte, dialog bool) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastInput = now
	ps := &p.person
	if ps.proc != pr {
		ps.proc, ps.line = pr, personLine{}
	}
	line := &ps.line
	if dialog {
		line = nil
	}
	before := ps.line
	if keys.feed(b, line) {
		ps.at = now
		close(ps.changed)
		ps.changed = make(chan struct{})
	}
	switch {
	case !ps.line.pending():
		ps.typedOut = nil
	case ps.line != before:
		ps.typedOut = p.outChanged
	}
}

// isInterruptKey reports whether a viewer's write is a key that stops an
// agent CLI's turn: Esc alone (not the start of an escape sequence) or
// Ctrl-C.
func isInterruptKey(b []byte) bool {
	return string(b) == "\x1b" || bytes.IndexByte(b, 0x03) >= 0
}

// personHold reports whether a person in attach holds run pr's input now:
// they typed within Spec.PersonQuiet, or left a line half typed. recheck
// is when the hold may end by itself (at most readinessRecheck); changed
// is closed at their next key.
func (p *Pane) personHold(pr *proc) (hold bool, recheck time.Duration, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := &p.person
	if ps.proc == pr && ps.line.pending() {
		return true, readinessRecheck, ps.changed
	}
	if ps.at.IsZero() {
		return false, 0, nil
	}
	if left := p.spec.PersonQuiet - time.Since(ps.at); left > 0 {
		return true, min(readinessRecheck, left), ps.changed
	}
	return false, 0, nil
}

// personTypedAfterHM reports whether a person's key reached the terminal
// after hm's own last typing (so the line may hold their text).
func (p *Pane) personTypedAfterHM() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.person.at.After(p.typedAt)
}

// setWaiting records why the delivery engine waits ("" when it does not),
// for Status.Waiting.
func (p *Pane) setWaiting(why string) {
	p.mu.Lock()
	was := p.waiting
	p.waiting = why
	p.mu.Unlock()
	if why != was && why != "" {
		p.log.Info("messages wait for a person", "waiting", why)
	}
}
