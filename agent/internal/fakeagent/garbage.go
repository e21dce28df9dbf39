package main

// Bad output and bad endings (issue #15): garbage spells, a terminal reset
// or a query whenever input arrives mid-typing, and an exit while a prompt
// is half typed. See the package comment for the variables.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// garbage is the FAKEAGENT_GARBAGE_* configuration.
type garbage struct {
	rate  int           // bytes per second
	spell time.Duration // how long each spell prints
	kinds []string      // what it prints: bytes, escapes, titles, resets
	rng   *rand.Rand
}

// garbageKinds are the kinds of FAKEAGENT_GARBAGE, all by default.
var garbageKinds = []string{"bytes", "escapes", "titles", "resets"}

// hugeTitle is the size of a title in a "titles" spell: at least 1 MiB.
const hugeTitle = 1<<20 + 1

// newGarbage reads the garbage variables; nil when FAKEAGENT_GARBAGE_KBPS
// is not set.
func newGarbage() *garbage {
	kbps := envInt("FAKEAGENT_GARBAGE_KBPS", 0)
	if kbps <= 0 {
		return nil
	}
	g := &garbage{
		rate:  kbps * 1024,
		spell: time.Duration(envInt("FAKEAGENT_GARBAGE_MS", 200)) * time.Millisecond,
		kinds: garbageKinds,
		rng:   rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano()))),
	}
	if k := os.Getenv("FAKEAGENT_GARBAGE"); k != "" {
		g.kinds = strings.Split(k, ",")
	}
	for _, k := range g.kinds {
		if !slices.Contains(garbageKinds, k) {
			fmt.Fprintf(os.Stderr, "fakeagent: FAKEAGENT_GARBAGE: unknown kind %q (want some of %s)\r\n", k, strings.Join(garbageKinds, ","))
			os.Exit(2)
		}
	}
	return g
}

// has reports whether the spell prints kind.
func (g *garbage) has(kind string) bool { return slices.Contains(g.kinds, kind) }

// malformed are escape sequences a broken program prints: truncated,
// unterminated, out of range, or cut by other controls.
var malformed = []string{
	"\x1b", "\x1b[", "\x1b[1;2;3", "\x1b[?", "\x1b[?1049", "\x1b[?2004", "\x1b]", "\x1b]0;unterminated title",
	"\x1bP", "\x1bPq#0;2;0;0;0#0!7~-", "\x1b_apc", "\x1b^pm", "\x1bX", "\x1b[99999999999999999999m",
	"\x1b[38;5;99999999m", "\x1b[99999;99999H", "\x1b[50;2r", "\x1b[0;0r", "\x1b[4h", "\x1b[4l",
	"\x1b[" + strings.Repeat("1;", 200) + "H", "\x1b[?1;2;3;4;5;6;7;1049;2004;9999999h", "\x1b[9999@", "\x1b[9999P",
	"\x1b[9999L", "\x1b[9999M", "\x1b[9999S", "\x1b[9999T", "\x1b[9999b", "\x1b[>9999u", "\x1b[<9999u",
	"\x1b(0lqqk\x1b(B", "\x1b#8", "\x1b7\x1b8", "\x1b[s\x1b[u", "\x1b[\x18x", "\x1b]0;\x1a", "\x1b[1\x1b[2",
	"\xff\xfe", "\xe6\x97", "\xf0\x9f\x98", "\xc0\x80", "\x9b", "\x9b6n", "\x9d0;t\x9c", "\x90q\x9c",
	"日本語\x1b[2P\x1b[5@", "e\u0301\u200d\U0001F468\u200d\U0001F469", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l",
	"\x1b[?6h", "\x1b[?7l", "\x1b[2J", "\x1b[3J", "\r\n", "\b\b\b", "\t\t", "\x07",
	// Queries: the terminal answers them into the input (see fence).
	"\x1b[6n", "\x1b[c", "\x1b[>c", "\x1b]11;?\x07", "\x1b[?u", "\x1b[>q", "\x1b[?2004$p", "\x1b[18t",
}

// resets are the reset sequences of the "resets" kind.
var resets = []string{"\x1bc", "\x1b[!p", "\x1b[?1049h\x1bc", "\x1b[!p\x1b[?2004l"}

// piece returns the next bit of garbage.
func (g *garbage) piece() []byte {
	switch g.kinds[g.rng.IntN(len(g.kinds))] {
	case "bytes":
		// About 5 ms' worth: no pause in the output long enough to look
		// like a quiet screen.
		b := make([]byte, min(max(g.rate/200, 64), 4096))
		for i := range b {
			b[i] = byte(g.rng.Uint32())
		}
		return b
	case "escapes":
		var b []byte
		for range 64 {
			b = append(b, malformed[g.rng.IntN(len(malformed))]...)
			if g.rng.IntN(2) == 0 {
				b = append(b, "text"...)
			}
		}
		return b
	case "resets":
		return []byte(resets[g.rng.IntN(len(resets))] + "after a reset\r\n")
	default: // titles: the huge one starts the spell (title); here small ones
		return []byte(fmt.Sprintf("\x1b]2;title %d\x07", g.rng.IntN(1000)))
	}
}

// title returns a huge title, terminated by BEL, by ST, or not at all
// (the next garbage goes into it).
func (g *garbage) title() []byte {
	b := make([]byte, 0, hugeTitle+16)
	b = append(b, "\x1b]0;"...)
	for len(b) < hugeTitle {
		b = append(b, "title ☃ "...)
	}
	switch g.rng.IntN(3) {
	case 0:
		b = append(b, '\a')
	case 1:
		b = append(b, "\x1b\\"...)
	}
	return b
}

// garbageSpell prints garbage at about the configured rate for the spell's
// length, then asks for the cursor position and waits for the answer (see
// fence), resets the terminal and shows a prompt again. Input that
// arrives meanwhile is kept (the terminal's answers to queries the garbage
// held are taken out) and handled after the spell: the program stays a
// working prompt that its user can type ahead into.
func (a *agent) garbageSpell() {
	g := a.garbage
	start := time.Now()
	written := 0
	write := func(b []byte) {
		n, _ := a.out.Write(b)
		written += n
	}
	if g.has("titles") {
		write(g.title())
	}
	for time.Since(start) < g.spell {
		write(g.piece())
		a.holdInput()
		due := start.Add(time.Duration(float64(written) / float64(g.rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			time.Sleep(min(wait, time.Until(start.Add(g.spell))))
		}
	}
	printing := time.Since(start)
	a.fence()
	a.printf("\x1bc") // RIS: nothing the garbage set survives
	if a.paste {
		a.printf("\x1b[?2004h")
	}
	a.printf("fakeagent garbage: %d bytes in %d ms\r\n", written, printing.Milliseconds())
}

// holdInput keeps the input read so far, without waiting.
func (a *agent) holdInput() {
	for {
		select {
		case b, ok := <-a.input:
			if !ok {
				return
			}
			a.held = append(a.held, b...)
		default:
			return
		}
	}
}

// fenceRE matches the answer to the fence's query (DECXCPR, which the
// garbage never asks).
var fenceRE = regexp.MustCompile(`\x1b\[\?\d+;\d+;1R`)

// fence ends a spell: it cancels whatever sequence the garbage left open
// (CAN, then ST) and asks for the cursor position (see ask). The terminal
// answers in order, so every answer to a query in the garbage came before
// the fence's.
func (a *agent) fence() { a.ask("\x18\x1b\\\x1b[?6n") }

// ask sends a query that ends in DECXCPR and keeps the input until the
// answer came, then takes all the terminal's answers out of the kept
// input, as a real line editor would not take them for typed text either.
// Without an answer in a second it asks again (five times at most).
func (a *agent) ask(query string) {
	from := len(a.held)
	for range 5 {
		a.printf("%s", query)
		timeout := time.After(time.Second)
		for !fenceRE.Match(a.held[from:]) {
			select {
			case b, ok := <-a.input:
				if !ok {
					return
				}
				a.held = append(a.held, b...)
				continue
			case <-timeout:
			}
			break
		}
		if fenceRE.Match(a.held[from:]) {
			break
		}
	}
	a.held = replyRE.ReplaceAll(a.held, nil)
}

// replyRE matches a terminal's answers to queries: control sequences that
// end in a letter (CPR, DA, DSR, DECRQM, kitty flags, window size), OSC
// strings (colours) and DCS strings (XTVERSION). hm types no escape
// sequence but the paste markers, which end in "~".
var replyRE = regexp.MustCompile(`\x1b\[[0-9;?>=<]*\$?[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1bP[^\x1b]*\x1b\\`)

// take handles one read of input, and then whatever input a garbage spell
// or a query kept meanwhile; true means exit. With FAKEAGENT_EXIT_MID a
// read that starts a prompt after the run's first is cut and the run ends
// (exitMidTyping); with FAKEAGENT_RESET_ON_INPUT a read that leaves a
// prompt half typed resets the terminal (resetMidTyping); with
// FAKEAGENT_QUERY_ON_INPUT each read waits for the answer to a query
// before it is handled.
func (a *agent) take(b []byte) bool {
	for {
		if len(b) == 0 {
			if len(a.held) == 0 {
				return false
			}
			b, a.held = a.held, nil
		}
		if a.garbage != nil {
			// A late answer to a fence that was asked again (the first
			// answer took over a second on a loaded machine) is no
			// typed text either.
			b = replyRE.ReplaceAll(b, nil)
			if len(b) == 0 {
				continue
			}
		}
		if a.queryOnInput {
			b = replyRE.ReplaceAll(b, nil)
			if len(b) == 0 {
				continue // only answers
			}
			a.ask("\x1b[?6n")
		}
		var rest []byte
		cut := a.exitMid > 0 && a.prompts > 0 && !a.typing()
		if cut && len(b) > a.exitMid {
			b, rest = b[:a.exitMid], b[a.exitMid:]
		}
		if a.feed(b, time.Now()) {
			return true
		}
		if cut && a.typing() {
			a.exitMidTyping()
		}
		if a.resetOnInput && a.typing() {
			a.resetMidTyping()
		}
		b = rest
	}
}

// typing reports whether a prompt is half typed: text in the input line,
// a paste begun, or the start of an escape sequence.
func (a *agent) typing() bool { return len(a.buf) > 0 || a.inPaste || len(a.pending) > 0 }

// exitMidTyping ends the run with a prompt half typed: what it read of
// the prompt is logged as discarded, and the exit code is 4.
func (a *agent) exitMidTyping() {
	lost := append(append([]byte(nil), a.buf...), a.pending...)
	a.logDiscarded(lost)
	a.printf("\r\nexiting with a prompt half typed (%d bytes)\r\n", len(lost))
	os.Exit(4)
}

// resetMidTyping prints a reset while a prompt is being typed, in turn a
// full reset (RIS, which clears the screen: "fakeagent reset N (RIS)", the
// prompt and the text so far are drawn again) and a soft one (DECSTR), and
// switches bracketed paste on again, as a program that resets its terminal
// restores its modes.
func (a *agent) resetMidTyping() {
	a.resets++
	if a.resets%2 == 1 {
		a.printf("\x1bc")
		if a.paste {
			a.printf("\x1b[?2004h")
		}
		a.printf("fakeagent reset %d (RIS)\r\n> ", a.resets)
		if a.echo {
			a.out.Write(bytes.ReplaceAll(a.buf, []byte("\n"), []byte("\r\n")))
		}
		return
	}
	a.printf("\x1b[!p")
	if a.paste {
		a.printf("\x1b[?2004h")
	}
}
