// Command fakeagent imitates an interactive agent CLI for the agent package's
// tests, including the behaviour that makes typing into real CLIs hard:
//
//   - it switches its terminal to raw mode and turns bracketed paste on
//     (prints ESC[?2004h) unless FAKEAGENT_NO_PASTE=1;
//   - an Enter (CR) that arrives within FAKEAGENT_ENTER_MS (default 120) of
//     other input is taken as a newline, not a submit; Enter inside a paste
//     is a newline too;
//   - after each submitted prompt it logs {"prompt":...,"at":unixms,"pid":N}
//     as a JSON line to $FAKEAGENT_LOG, prints a receipt and a new prompt
//     marker, and, with FAKEAGENT_BUSY_MS, prints continuously for that long
//     (a busy spell) without reading input;
//   - FAKEAGENT_EXIT_AFTER=N exits with code 3 after the Nth prompt;
//   - FAKEAGENT_DONE_WORD=w prints FAKEAGENT_DONE_LINE (default
//     __HM_BG_DONE__) on a line of its own after a prompt containing w;
//   - Ctrl-U empties the input (hm's erase key), or with
//     FAKEAGENT_KILL_LINE=1 only its last line, as a multi-line input box
//     whose Ctrl-U deletes to the start of the line; Backspace deletes a
//     character, a newline too (the input is redrawn a row up);
//   - FAKEAGENT_NEWLINE_ENTERS=N: the first N Enters (CR outside a paste)
//     are newlines in the input whatever their timing, as a program that
//     is not taking prompts yet;
//   - FAKEAGENT_MOUNT_MS=N: a program still mounting its UI for N ms after
//     its banner, as Ink-drawn CLIs do on a loaded machine: an Enter (outside
//     a paste) then submits nothing; the screen is cleared and shows a
//     spinner row ("⠋ loading") until the N ms are over, then the banner,
//     the prompt and the input, kept whole, are drawn again; with
//     FAKEAGENT_MOUNT_NEWLINE=1 that Enter is kept in the input as a newline;
//     with FAKEAGENT_MOUNT_HIDE=1 the prompt is drawn empty after the mount,
//     and the kept input shows again only with the next key read (drawn
//     whole before it), as Gemini CLI redraws its input in steps on a
//     loaded machine;
//   - an Esc read on its own interrupts a busy spell (FAKEAGENT_SILENT_MS,
//     FAKEAGENT_SPINNER_MS, below), logged as {"interrupted":true,...};
//     with FAKEAGENT_RESTORE_ON_ESC=1 the interrupted prompt is put back
//     into the input after the new prompt marker, logged as
//     {"restored":...}, as Claude Code does for a turn interrupted before
//     its answer; with FAKEAGENT_BUSY_AGAIN_MS=N the prompt shows for N ms
//     after such an interrupt and then a second busy spell begins (work the
//     CLI resumes or had queued), once per prompt;
//   - FAKEAGENT_QUEUE_MS=N: for N ms after its banner the program is still
//     initializing: a submitted prompt is queued, not taken up (it prints
//     "ℹ Initializing... Prompts will be queued." and a new prompt marker,
//     its input empty); then every queued prompt is submitted as one,
//     joined by a blank line, after a spinner row ("⠋ sending"), as
//     Gemini CLI does;
//   - FAKEAGENT_COLLAPSE_LINES=N shows a paste of more than N lines as
//     "[Pasted Text: K lines]" instead of its text (as Gemini CLI does),
//     also when it draws the kept input again after a mount;
//   - FAKEAGENT_SUBMIT_LAG_MS=N: after the submitting Enter is read, N ms
//     pass without output (and without reading) before the receipt, as a
//     CLI's redraw on a loaded machine;
//   - FAKEAGENT_IGNORE_HUP=1 ignores SIGHUP;
//   - FAKEAGENT_START_MS delays the banner and the paste switch;
//   - FAKEAGENT_ECHO=0 turns off the echo of typed input, so that output
//     appears only when a prompt is submitted;
//   - FAKEAGENT_QUERY=1 asks the terminal, before the banner, for the cursor
//     position, primary and secondary device attributes, the background
//     colour, the kitty keyboard flags and the terminal version (as
//     prompt_toolkit and Codex do) and blocks until every answer came, then
//     prints them as "terminal answered: ..."; input read meanwhile is kept;
//   - FAKEAGENT_DRAW_MS=N: a lagging renderer. What is typed shows only N ms
//     after the first key not yet shown, and an Enter submits the input as
//     last shown: the keys not shown yet are thrown away with the rest of
//     the input, as Gemini CLI 0.61 submits the text of its last render
//     (on a loaded machine a person's last keys were lost so);
//   - FAKEAGENT_DIALOG_MS=N shows a menu ("Do you want to proceed?") for N ms
//     before the banner, as Gemini's auth dialog or a trust prompt does:
//     whatever is typed meanwhile is taken as a menu choice, logged as a
//     prompt "DIALOG:<input>", and thrown away.
//
// The hard cases of typing into a pane, each turned on by one variable:
//
//   - FAKEAGENT_SILENT_MS=N: silently busy. After each prompt (and its
//     receipt) it works for N ms without printing anything and without a
//     prompt marker, reading and throwing away whatever is typed meanwhile;
//     then it prints "> ". The old prompt row is still on the screen, so the
//     program looks ready while it is not.
//   - FAKEAGENT_SPINNER_MS=N: spinner busy. As silently busy, but it draws a
//     braille spinner frame ("⠋ working…", one every 80 ms, in place on the
//     row below the receipt) for the N ms, then erases it and prints "> ".
//   - FAKEAGENT_LATE_RAW_MS=N: late raw mode. It prints "fakeagent loading"
//     and stays in cooked mode (the kernel echoes what is typed) for N ms
//     without reading, then switches to raw mode with TCSAFLUSH, so what was
//     typed meanwhile is lost, and only then shows its banner and prompt.
//   - FAKEAGENT_LINE_PASTE=1: line-at-a-time paste, as a GNU readline
//     prompt: bracketed paste is on, but a newline inside a paste submits
//     the line read so far, so multi-line text is cut into several prompts.
//   - FAKEAGENT_TUI=1: a full-screen TUI on the alternate screen (ESC[?1049h)
//     that clears and redraws the whole screen on every change: history
//     rows at the top (each submitted prompt as "> first line" and its
//     receipt), a status row (the spinner while busy), and at the bottom an
//     input box whose middle row is "│ > " followed by the tail of the typed
//     text, the cursor after it. It redraws on SIGWINCH too. With
//     FAKEAGENT_SPINNER_MS or FAKEAGENT_SILENT_MS the busy spell shows in the
//     status row (or nowhere); the box stays drawn. With FAKEAGENT_TUI_DIFF=1
//     it draws only the rows that changed since its last frame (as Ink-drawn
//     CLIs do), the whole screen again after a SIGWINCH.
//
// Bad output and bad endings, each turned on by one variable (not with
// FAKEAGENT_TUI):
//
//   - FAKEAGENT_GARBAGE_KBPS=N: garbage spells. Before the banner and after
//     each prompt it prints garbage at about N KiB/s for
//     FAKEAGENT_GARBAGE_MS (default 200) ms: the kinds listed in
//     FAKEAGENT_GARBAGE (comma-separated, default all): "bytes" (random
//     bytes), "escapes" (malformed, truncated and out-of-range escape
//     sequences, invalid UTF-8, C1 controls, a few queries), "titles" (an
//     OSC title of more than 1 MiB at the start of each spell, ended by
//     BEL, by ST or not at all) and "resets" (RIS "ESC c", DECSTR
//     "ESC[!p", some after switching modes). Then it cancels any open
//     sequence, asks for the cursor position and waits for the answer (so
//     every answer to a query in the garbage came before it), resets the
//     terminal (RIS), switches bracketed paste on again, prints
//     "fakeagent garbage: N bytes in M ms" and its prompt. Input read
//     during a spell is kept, less the terminal's answers, and handled
//     after it.
//   - FAKEAGENT_RESET_ON_INPUT=1: each read of input that leaves a prompt
//     half typed is followed by a reset, in turn RIS (the screen clears;
//     "fakeagent reset N (RIS)", the prompt and the text so far are drawn
//     again) and DECSTR, each followed by the bracketed paste switch.
//   - FAKEAGENT_QUERY_ON_INPUT=1: on each read of input it asks the
//     terminal for the cursor position (DECXCPR) and handles (and echoes)
//     the input only once the answer came, as a prompt that asks where
//     the cursor is before it redraws; input read meanwhile is kept, less
//     the terminal's answers.
//   - FAKEAGENT_EXIT_MID=N: from the run's second prompt on, the first
//     read of a prompt's input ends the run with the prompt half typed: it
//     takes at most N bytes of that read, shows them, logs them as
//     discarded and exits with code 4. The run's first prompt (in the next
//     run, the message it cut, typed again) is taken whole.
//   - FAKEAGENT_ARGS_LOG=file: at start it appends its arguments, as a
//     JSON line {"args":[...],"pid":N}, to file (the command line a CLI's
//     program got, e.g. its resume form).
//
// Input thrown away (by a busy spell, or pending when late raw mode flushes
// it) is logged as {"discarded":...,"at":unixms,"pid":N}, one line per
// spell, so that a test can tell text lost from text never typed. Markers
// for a profile: ready ">" (the plain prompt "> " is ">" on a screen whose
// rows drop trailing blanks) or "│ > " (TUI), busy the spinner glyphs,
// blocked "Do you want to proceed?".
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// logArgs appends the program's arguments to path as a JSON line (none
// when path is empty).
func logArgs(path string) error {
	if path == "" {
		return nil
	}
	line, err := json.Marshal(map[string]any{"args": append([]string{}, os.Args[1:]...), "pid": os.Getpid()})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("args log: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func main() {
	if os.Getenv("FAKEAGENT_IGNORE_HUP") == "1" {
		signal.Ignore(syscall.SIGHUP)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: %v\r\n", err)
		os.Exit(1)
	}
}

type agent struct {
	out       *os.File
	logPath   string
	threshold time.Duration
	busy      time.Duration
	exitAfter int
	doneWord  string
	doneLine  string
	echo      bool
	pasteFrom int           // where the current paste starts in buf
	silent    time.Duration // FAKEAGENT_SILENT_MS
	spinner   time.Duration // FAKEAGENT_SPINNER_MS
	linePaste bool          // FAKEAGENT_LINE_PASTE
	tui       *screen       // FAKEAGENT_TUI, else nil
	input     <-chan []byte
	paste     bool // bracketed paste switched on (not FAKEAGENT_NO_PASTE)

	garbage      *garbage // FAKEAGENT_GARBAGE_KBPS, else nil
	held         []byte   // input kept during a garbage spell
	resetOnInput bool     // FAKEAGENT_RESET_ON_INPUT
	queryOnInput bool     // FAKEAGENT_QUERY_ON_INPUT
	resets       int
	exitMid      int           // FAKEAGENT_EXIT_MID
	killLine     bool          // FAKEAGENT_KILL_LINE
	newlineEnter int           // FAKEAGENT_NEWLINE_ENTERS still to come
	restoreOnEsc bool          // FAKEAGENT_RESTORE_ON_ESC
	busyAgain    time.Duration // FAKEAGENT_BUSY_AGAIN_MS
	submitLag    time.Duration // FAKEAGENT_SUBMIT_LAG_MS
	collapse     int           // FAKEAGENT_COLLAPSE_LINES
	collapsed    string        // the marker the kept input shows as, if collapsed
	mountUntil   time.Time     // FAKEAGENT_MOUNT_MS after the banner, else zero
	mountNewline bool          // FAKEAGENT_MOUNT_NEWLINE
	mountHide    bool          // FAKEAGENT_MOUNT_HIDE
	queueUntil   time.Time     // FAKEAGENT_QUEUE_MS after the banner, else zero
	queued       []string      // prompts queued meanwhile
	hidden       bool          // the kept input is not drawn yet (mountHide)
	drawLag      time.Duration // FAKEAGENT_DRAW_MS
	undrawn      []byte        // echo not shown yet (drawLag)
	drawn        int           // bytes of buf shown (drawLag)
	drawDue      <-chan time.Time

	prompts   int
	buf       []byte
	inPaste   bool
	pending   []byte // possible start of a paste marker
	lastInput time.Time
}

func run() error {
	if err := logArgs(os.Getenv("FAKEAGENT_ARGS_LOG")); err != nil {
		return err
	}
	a := &agent{
		out:       os.Stdout,
		logPath:   os.Getenv("FAKEAGENT_LOG"),
		threshold: time.Duration(envInt("FAKEAGENT_ENTER_MS", 120)) * time.Millisecond,
		busy:      time.Duration(envInt("FAKEAGENT_BUSY_MS", 0)) * time.Millisecond,
		exitAfter: envInt("FAKEAGENT_EXIT_AFTER", 0),
		doneWord:  os.Getenv("FAKEAGENT_DONE_WORD"),
		doneLine:  os.Getenv("FAKEAGENT_DONE_LINE"),
		echo:      os.Getenv("FAKEAGENT_ECHO") != "0",
		silent:    time.Duration(envInt("FAKEAGENT_SILENT_MS", 0)) * time.Millisecond,
		spinner:   time.Duration(envInt("FAKEAGENT_SPINNER_MS", 0)) * time.Millisecond,
		linePaste: os.Getenv("FAKEAGENT_LINE_PASTE") == "1",
		paste:     os.Getenv("FAKEAGENT_NO_PASTE") != "1",

		garbage:      newGarbage(),
		resetOnInput: os.Getenv("FAKEAGENT_RESET_ON_INPUT") == "1",
		queryOnInput: os.Getenv("FAKEAGENT_QUERY_ON_INPUT") == "1",
		exitMid:      envInt("FAKEAGENT_EXIT_MID", 0),
		killLine:     os.Getenv("FAKEAGENT_KILL_LINE") == "1",
		newlineEnter: envInt("FAKEAGENT_NEWLINE_ENTERS", 0),
		restoreOnEsc: os.Getenv("FAKEAGENT_RESTORE_ON_ESC") == "1",
		busyAgain:    time.Duration(envInt("FAKEAGENT_BUSY_AGAIN_MS", 0)) * time.Millisecond,
		submitLag:    time.Duration(envInt("FAKEAGENT_SUBMIT_LAG_MS", 0)) * time.Millisecond,
		collapse:     envInt("FAKEAGENT_COLLAPSE_LINES", 0),
		mountNewline: os.Getenv("FAKEAGENT_MOUNT_NEWLINE") == "1",
		mountHide:    os.Getenv("FAKEAGENT_MOUNT_HIDE") == "1",
		drawLag:      time.Duration(envInt("FAKEAGENT_DRAW_MS", 0)) * time.Millisecond,
	}
	if a.doneLine == "" {
		a.doneLine = "__HM_BG_DONE__"
	}
	if os.Getenv("FAKEAGENT_TUI") == "1" {
		a.tui = &screen{diff: os.Getenv("FAKEAGENT_TUI_DIFF") == "1"}
	}
	if ms := envInt("FAKEAGENT_LATE_RAW_MS", 0); ms > 0 {
		a.printf("fakeagent loading (pid %d)\r\n", os.Getpid())
		time.Sleep(time.Duration(ms) * time.Millisecond)
		if term.IsTerminal(0) {
			lost, err := makeRawFlush(0)
			if err != nil {
				return fmt.Errorf("raw mode: %w", err)
			}
			a.logDiscarded(lost)
		}
	} else if term.IsTerminal(0) {
		if _, err := term.MakeRaw(0); err != nil {
			return fmt.Errorf("raw mode: %w", err)
		}
	}
	if ms := envInt("FAKEAGENT_START_MS", 0); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	var gate chan struct{}
	if a.exitMid > 0 {
		gate = make(chan struct{})
	}
	input := readInput(gate)
	a.input = input
	if ms := envInt("FAKEAGENT_DIALOG_MS", 0); ms > 0 {
		a.dialog(input, time.Duration(ms)*time.Millisecond)
	}
	var early []byte
	if os.Getenv("FAKEAGENT_QUERY") == "1" {
		var err error
		if early, err = a.queryTerminal(input); err != nil {
			return err
		}
	}
	if a.garbage != nil {
		a.garbageSpell()
	}
	paste := a.paste
	var winch chan os.Signal
	if a.tui != nil {
		winch = make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		a.tuiStart(paste)
	} else {
		a.printf("fakeagent ready (pid %d)\r\n", os.Getpid())
		if paste {
			a.printf("\x1b[?2004h")
		}
		a.printf("> ")
	}
	if ms := envInt("FAKEAGENT_MOUNT_MS", 0); ms > 0 {
		a.mountUntil = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	var queueDone <-chan time.Time
	if ms := envInt("FAKEAGENT_QUEUE_MS", 0); ms > 0 {
		a.queueUntil = time.Now().Add(time.Duration(ms) * time.Millisecond)
		queueDone = time.After(time.Duration(ms) * time.Millisecond)
	}
	if a.take(early) {
		return nil
	}
	for {
		select {
		case b, ok := <-input:
			if !ok {
				return nil // terminal gone
			}
			if done := a.take(b); done {
				return nil
			}
			if gate != nil {
				gate <- struct{}{} // read on
			}
		case <-queueDone:
			if a.sendQueued() {
				return nil
			}
		case <-winch:
			a.tui.resize()
			a.draw()
		case <-a.drawDue:
			a.drawDue = nil
			a.out.Write(a.undrawn)
			a.undrawn, a.drawn = a.undrawn[:0], len(a.buf)
		}
	}
}

func (a *agent) printf(format string, args ...any) {
	fmt.Fprintf(a.out, format, args...)
}

// feed processes one read's worth of input; true means exit.
func (a *agent) feed(chunk []byte, now time.Time) bool {
	var echo []byte
	if a.hidden && len(chunk) > 0 {
		a.hidden = false
		a.drawKept()
	}
	defer func() {
		if a.tui != nil && a.echo {
			a.draw() // a TUI redraws on every change
		}
	}()
	for i, c := range chunk {
		if len(a.pending) > 0 || c == 0x1b {
			a.pending = append(a.pending, c)
			p := string(a.pending)
			switch {
			case p == pasteStart:
				a.inPaste, a.pending, a.pasteFrom = true, a.pending[:0], len(a.buf)
				continue
			case p == pasteEnd:
				a.inPaste, a.pending = false, a.pending[:0]
				a.lastInput = now
				if lines := bytes.Count(a.buf[a.pasteFrom:], []byte("\n")) + 1; a.echo && a.tui == nil && a.collapse > 0 && lines > a.collapse {
					a.collapsed = fmt.Sprintf("[Pasted Text: %d lines] ", lines)
					a.printf("%s", a.collapsed)
				} else if a.echo && a.tui == nil {
					// A paste is announced, then shown whole, its
					// newlines as line breaks (as an input box would
					// show it).
					a.printf("[pasted %d bytes] ", len(a.buf)-a.pasteFrom)
					a.out.Write(bytes.ReplaceAll(a.buf[a.pasteFrom:], []byte("\n"), []byte("\r\n")))
				}
				continue
			case strings.HasPrefix(pasteStart, p) || strings.HasPrefix(pasteEnd, p):
				continue
			}
			// Not a paste marker: keep the bytes literally so that tests
			// can see any escape that got through.
			a.buf = append(a.buf, a.pending...)
			a.pending = a.pending[:0]
			a.lastInput = now
			continue
		}
		switch {
		case a.inPaste && (c == '\r' || c == '\n') && a.linePaste:
			// A readline prompt: the newline submits the line so far.
			if a.submit(chunk[i+1:]) {
				return true
			}
			if a.discards() {
				return false // the rest of the chunk went to the busy spell
			}
			continue
		case a.inPaste && (c == '\r' || c == '\n'):
			a.buf = append(a.buf, '\n')
		case a.inPaste:
			a.buf = append(a.buf, c)
		case c == '\r' && now.Before(a.mountUntil):
			a.flushEcho(echo)
			echo = echo[:0]
			a.mount()
			continue
		case c == '\r':
			if a.newlineEnter > 0 || now.Sub(a.lastInput) < a.threshold {
				a.newlineEnter = max(0, a.newlineEnter-1)
				a.buf = append(a.buf, '\n') // too soon after typing: newline
				echo = append(echo, '\r', '\n')
				a.lastInput = now
				continue
			}
			a.flushEcho(echo)
			echo = echo[:0]
			if a.submit(chunk[i+1:]) {
				return true
			}
			if a.discards() {
				return false // the rest of the chunk went to the busy spell
			}
			continue
		case c == '\n':
			a.buf = append(a.buf, '\n')
		case c == 0x7f || c == 0x08:
			if len(a.buf) > 0 {
				_, size := utf8.DecodeLastRune(a.buf)
				echo = a.cut(echo, len(a.buf)-size)
			}
		case c == 0x03: // Ctrl-C
			if len(a.buf) == 0 {
				os.Exit(130)
			}
			a.buf = a.buf[:0]
			echo = append(echo, "^C\r\n> "...)
		case c == 0x15: // Ctrl-U: kill the input (or its last line)
			from := 0
			if a.killLine {
				from = bytes.LastIndexByte(a.buf, '\n') + 1
			}
			echo = a.cut(echo, from)
		case c == 0x04 && len(a.buf) == 0: // Ctrl-D
			a.printf("\r\nbye\r\n")
			return true
		default:
			a.buf = append(a.buf, c)
			echo = append(echo, c)
		}
		a.lastInput = now
	}
	a.flushEcho(echo)
	return false
}

// mount is an Enter taken while the UI still mounts: nothing is submitted;
// the screen is cleared, a spinner row shows until the mount is over, and
// then the banner, the prompt and the kept input are drawn again.
func (a *agent) mount() {
	if a.mountNewline {
		a.buf = append(a.buf, '\n')
	}
	a.printf("\x1b[2J\x1b[H⠋ loading\r\n")
	time.Sleep(time.Until(a.mountUntil))
	a.mountUntil = time.Time{}
	a.printf("\x1b[2J\x1b[Hfakeagent ready (pid %d)\r\n> ", os.Getpid())
	if a.mountHide {
		a.hidden = true // drawn with the next key (feed)
		return
	}
	a.drawKept()
}

// drawKept draws the kept input after the prompt: its collapsed marker, or
// its text.
func (a *agent) drawKept() {
	if a.collapsed != "" {
		a.printf("%s", a.collapsed)
		return
	}
	a.out.Write(bytes.ReplaceAll(a.buf, []byte("\n"), []byte("\r\n")))
}

// cut shortens the input to its first n bytes and returns echo with what
// shows the change: a Backspace-space-Backspace per character when the cut
// stays on the input's last line, else a redraw from the prompt's row.
func (a *agent) cut(echo []byte, n int) []byte {
	gone := a.buf[n:]
	rows := bytes.Count(gone, []byte("\n"))
	if rows == 0 {
		for range utf8.RuneCount(gone) {
			echo = append(echo, '\b', ' ', '\b')
		}
		a.buf = a.buf[:n]
		return echo
	}
	up := bytes.Count(a.buf, []byte("\n")) // rows below the prompt's
	a.buf = a.buf[:n]
	echo = append(echo, '\r')
	echo = fmt.Appendf(echo, "\x1b[%dA", up)
	echo = append(echo, "\x1b[J> "...)
	return append(echo, bytes.ReplaceAll(a.buf, []byte("\n"), []byte("\r\n"))...)
}

// flushEcho shows typed input, unless echo is off (a TUI redraws instead).
func (a *agent) flushEcho(echo []byte) {
	if !a.echo || len(echo) == 0 || a.tui != nil {
		return
	}
	if a.drawLag > 0 {
		a.undrawn = append(a.undrawn, echo...)
		if a.drawDue == nil {
			a.drawDue = time.After(a.drawLag)
		}
		return
	}
	a.out.Write(echo)
}

// shownInput cuts the input to what was shown of it (drawLag): the rest is
// thrown away.
func (a *agent) shownInput() {
	if a.drawLag <= 0 {
		return
	}
	if a.drawn < len(a.buf) {
		a.logDiscarded(a.buf[a.drawn:])
		a.buf = a.buf[:a.drawn]
	}
	a.undrawn, a.drawn, a.drawDue = a.undrawn[:0], 0, nil
}

// submit handles a submitted prompt; true means exit. rest is the input
// read after the submitting Enter: with a busy spell that throws input
// away (see discards) it is thrown away too.
func (a *agent) submit(rest []byte) bool {
	if time.Now().Before(a.queueUntil) {
		a.queued = append(a.queued, string(a.buf))
		a.buf = a.buf[:0]
		a.collapsed = ""
		a.printf("\r\nℹ Initializing... Prompts will be queued.\r\n> ")
		return false
	}
	time.Sleep(a.submitLag)
	a.shownInput()
	prompt := string(a.buf)
	a.buf = a.buf[:0]
	a.collapsed = ""
	a.prompts++
	a.logPrompt(prompt)
	first, _, _ := strings.Cut(prompt, "\n")
	if len(first) > 60 {
		first = first[:60]
	}
	first = strings.ToValidUTF8(first, "?")
	if a.tui != nil {
		a.tui.add("> "+first, fmt.Sprintf("● received %d bytes", len(prompt)))
		a.draw()
	} else {
		a.printf("\r\n● received %d bytes: %s\r\n", len(prompt), first)
	}
	if a.doneWord != "" && strings.Contains(prompt, a.doneWord) {
		if a.tui != nil {
			a.tui.add(a.doneLine)
		} else {
			a.printf("%s\r\n", a.doneLine)
		}
	}
	if a.busy > 0 {
		end := time.Now().Add(a.busy)
		for i := 0; time.Now().Before(end); i++ {
			a.printf("working %d\r\n", i)
			time.Sleep(10 * time.Millisecond)
		}
	}
	if a.exitAfter > 0 && a.prompts >= a.exitAfter {
		a.printf("exiting after %d prompts\r\n", a.prompts)
		os.Exit(3)
	}
	if a.garbage != nil {
		a.garbageSpell()
	}
	interrupted := a.discards() && a.busySpell(rest)
	if a.tui == nil {
		a.printf("> ")
	}
	if interrupted && a.busyAgain > 0 {
		time.Sleep(a.busyAgain)
		a.printf("\r\n")
		interrupted = a.busySpell(nil)
		if a.tui == nil {
			a.printf("> ")
		}
	}
	if interrupted && a.restoreOnEsc {
		a.restore(prompt)
	}
	if a.tui != nil {
		a.draw()
	}
	return false
}

// terminalAnswers match the replies to the queries queryTerminal sends.
var terminalAnswers = []struct {
	name string
	re   *regexp.Regexp
}{
	{"cpr", regexp.MustCompile(`\x1b\[(\d+;\d+)R`)},
	{"da1", regexp.MustCompile(`\x1b\[\?([\d;]*)c`)},
	{"da2", regexp.MustCompile(`\x1b\[>([\d;]*)c`)},
	{"bg", regexp.MustCompile(`\x1b\]11;([^\x07\x1b]*)(?:\x07|\x1b\\)`)},
	{"kitty", regexp.MustCompile(`\x1b\[\?(\d*)u`)},
	{"version", regexp.MustCompile(`\x1bP>\|([^\x1b]*)\x1b\\`)},
}

// queryTerminal sends the queries and blocks until all were answered. It
// returns the other input read meanwhile.
func (a *agent) queryTerminal(input <-chan []byte) ([]byte, error) {
	a.printf("\x1b[6n\x1b[c\x1b[>c\x1b]11;?\x07\x1b[?u\x1b[>q")
	var in []byte
	for {
		var got []string
		rest := in
		for _, ans := range terminalAnswers {
			m := ans.re.FindSubmatchIndex(rest)
			if m == nil {
				break
			}
			got = append(got, ans.name+"="+string(rest[m[2]:m[3]]))
			rest = append(rest[:m[0]:m[0]], rest[m[1]:]...)
		}
		if len(got) == len(terminalAnswers) {
			a.printf("terminal answered: %s\r\n", strings.Join(got, " "))
			return rest, nil
		}
		b, ok := <-input
		if !ok {
			return nil, errors.New("terminal gone while waiting for answers")
		}
		in = append(in, b...)
	}
}

// dialog shows a menu for d; input meanwhile is a menu choice, logged and
// discarded.
func (a *agent) dialog(input <-chan []byte, d time.Duration) {
	a.printf("Do you want to proceed?\r\n\u276f 1. Yes\r\n  2. No\r\n")
	end := time.After(d)
	var choice []byte
	for wait := true; wait; {
		select {
		case b, ok := <-input:
			if !ok {
				wait = false
			}
			choice = append(choice, b...)
		case <-end:
			wait = false
		}
	}
	if len(choice) > 0 {
		a.logPrompt("DIALOG:" + string(choice))
	}
	a.printf("\x1b[2J\x1b[H")
}

// readInput passes each read of stdin to the returned channel, closed at
// the end of input. With gate, it reads again only once the main loop took
// the last read (a receive on gate): a program that exits while handling
// a read leaves what came after it unread in the terminal, as a program
// that stops reading before it exits does (FAKEAGENT_EXIT_MID).
func readInput(gate <-chan struct{}) <-chan []byte {
	ch := make(chan []byte, 16)
	go func() {
		defer close(ch)
		for {
			rb := make([]byte, 64*1024)
			n, err := os.Stdin.Read(rb)
			if n > 0 {
				ch <- rb[:n]
				if gate != nil {
					<-gate
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// logPrompt appends a prompt to $FAKEAGENT_LOG.
func (a *agent) logPrompt(prompt string) {
	a.logRecord(struct {
		Prompt string `json:"prompt"`
		At     int64  `json:"at"`
		PID    int    `json:"pid"`
	}{prompt, time.Now().UnixMilli(), os.Getpid()})
}

// logDiscarded appends input thrown away to $FAKEAGENT_LOG, if any.
func (a *agent) logDiscarded(lost []byte) {
	if len(lost) == 0 {
		return
	}
	a.logRecord(struct {
		Discarded string `json:"discarded"`
		At        int64  `json:"at"`
		PID       int    `json:"pid"`
	}{string(lost), time.Now().UnixMilli(), os.Getpid()})
}

// logRecord appends one JSON line to $FAKEAGENT_LOG.
func (a *agent) logRecord(rec any) {
	if a.logPath == "" {
		return
	}
	line, _ := json.Marshal(rec)
	f, err := os.OpenFile(a.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		f.Write(append(line, '\n'))
		f.Close()
	}
}

// sendQueued submits the prompts queued while initializing
// (FAKEAGENT_QUEUE_MS) as one, after a moment of spinner; true means exit.
func (a *agent) sendQueued() bool {
	if len(a.queued) == 0 {
		return false
	}
	a.printf("\r\n⠋ sending")
	time.Sleep(300 * time.Millisecond)
	a.printf("\r\x1b[K")                    // the spinner row goes
	typing := append([]byte(nil), a.buf...) // the input typed meanwhile stays
	a.buf = append(a.buf[:0], strings.Join(a.queued, "\n\n")...)
	a.queued = nil
	if a.submit(nil) {
		return true
	}
	a.buf = append(a.buf[:0], typing...)
	a.out.Write(bytes.ReplaceAll(a.buf, []byte("\n"), []byte("\r\n")))
	return false
}
