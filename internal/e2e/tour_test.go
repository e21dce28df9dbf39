package e2e

import (
	"strings"
	"testing"
)

// TestTourShowsMessages is the README's tour as a person meets it (issue
// #34 item 1): the hub started as make run starts it, hm-send to architect,
// then hm attach architect in a terminal: the message's text is on the
// pane's screen, not only a pointer to a file. Attach keeps its banner (in
// the window title) and leaves the cursor at column 0 on detach.
func TestTourShowsMessages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--demo")
	defer h.stop()
	const text = "(BUILDER #1): tests pass"
	if r := run(t, root, nil, "hm-send", "architect", text); r.code != 0 {
		t.Fatalf("hm-send: %+v", r)
	}
	raw := attachShows(t, root, "architect", text, "architect> ")
	// The banner survives the pane's screen in the window title, and the
	// detach line ends at column 0 for the shell's prompt (issue #34 item 11).
	for _, want := range []string{"\x1b[22;0t\x1b]2;hm: attached to architect (Ctrl-\\ detaches)\x07", "hm: detached\r\n\x1b[23;0t"} {
		if !strings.Contains(raw, want) {
			t.Errorf("hm attach's output lacks %q:\n%q", want, raw)
		}
	}
}
