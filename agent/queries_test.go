package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestTerminalQueriesAnswered: a program that asks the terminal for the
// cursor position, device attributes, background colour, kitty keyboard
// flags and version and blocks until answered (as prompt_toolkit and Codex
// do) gets the answers from the pane's terminal, proceeds, and takes a
// message. Before the pane answered queries it stalled forever.
func TestTerminalQueriesAnswered(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_QUERY=1")
	p := startPane(t, spec)
	want := "terminal answered: cpr=1;1 da1=62;22 da2=1;10;0 bg=rgb:0000/0000/0000 kitty=0 version=hm-vterm(1)"
	poll.For(t, 10*time.Second, func() error {
		if s := p.Screen(); !strings.Contains(s.Text(), want) || !strings.Contains(s.Text(), "fakeagent ready") {
			return fmt.Errorf("screen:\n%s", s.Text())
		}
		return nil
	})
	stages := newStageLog()
	p.Enqueue(Delivery{MessageID: "q-1", Content: "(ARCH #1): after the queries", Report: stages.reporter("q-1")})
	poll.For(t, 10*time.Second, func() error { return poll.Want(stages.final("q-1"), "final stage") })
	prompts := readPrompts(t, logPath)
	if len(prompts) != 1 || !strings.Contains(prompts[0].Prompt, "after the queries") || !strings.Contains(prompts[0].Prompt, "[hm:q-1]") {
		t.Fatalf("prompts %+v", prompts)
	}
}

// TestTerminalQueriesViewerAnswers: while a viewer that types is attached,
// its own terminal answers the queries and the pane does not add a second
// answer.
func TestTerminalQueriesViewerAnswers(t *testing.T) {
	t.Parallel()
	spec, _ := fakeSpec(t, "FAKEAGENT_QUERY=1", "FAKEAGENT_START_MS=500", "FAKEAGENT_ECHO=1")
	p := startPane(t, spec)
	base := attachServer(t, map[string]*Pane{"builder": p})
	c := attach(t, base+"builder", "secret", false)
	c.waitOutput(t, "\x1b[6n")
	// The viewer's terminal answers at its own cursor position.
	if _, err := c.in.Write([]byte("\x1b[9;7R\x1b[?62;22c\x1b[>1;10;0c\x1b]11;rgb:1111/1111/1111\x07\x1b[?0u\x1bP>|viewer\x1b\\")); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(strings.Contains(p.Screen().Text(), "cpr=9;7"), "viewer's answer used: %s", p.Screen().Text())
	})
	// Had the pane answered too, its answers would be typed input now.
	time.Sleep(200 * time.Millisecond)
	s := p.Screen()
	if r := s.Lines[s.CursorRow]; r != ">" {
		t.Errorf("prompt row %q: a second answer reached the program", r)
	}
}
