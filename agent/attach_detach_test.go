package agent

import (
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestAttachDetachKeyEncodings: Ctrl-\ detaches however the person's
// terminal encodes it. A pane program that switches the kitty keyboard
// protocol on (Codex does: "ESC[>1u") or xterm's modifyOtherKeys reaches
// the viewer's terminal through attach, which then sends Ctrl-\ as an
// escape sequence instead of the byte 0x1c.
func TestAttachDetachKeyEncodings(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: `printf '\033[>1u> ready'; exec sleep 300`})
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(len(p.Screen().Lines) > 0 && p.Screen().Lines[0] == "> ready", "prompt")
	})
	base := attachServer(t, map[string]*Pane{"builder": p})
	tests := []struct {
		name string
		keys string
	}{
		{"legacy byte", "\x1c"},
		{"kitty", "\x1b[92;5u"},
		{"kitty with press event", "\x1b[92;5:1u"},
		{"kitty with num lock", "\x1b[92;133u"},
		{"kitty after other keys", "ab\x1b[92;5u"},
		{"xterm modifyOtherKeys", "\x1b[27;5;92~"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, view := range []bool{false, true} {
				c := attachSized(t, base+"builder", view, 80, 24)
				c.waitOutput(t, "> ready")
				if _, err := c.in.Write([]byte(tc.keys)); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-c.done:
					c.done <- err // for the cleanup
					if err != nil {
						t.Errorf("view=%v: AttachClient: %v", view, err)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("view=%v: %q did not detach", view, tc.keys)
				}
			}
		})
	}
}
