package notify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// commandTimeout bounds one run of a desktop notifier command.
const commandTimeout = 10 * time.Second

// Desktop shows events as desktop notifications by running a command.
type Desktop struct {
	name string
	argv func(ev Event) []string
}

// DesktopCommand runs command, a shell command line (settings.json
// "notifications": {"command"}), with the title and the body as its two
// arguments: /bin/sh -c '<command> "$@"' hm <title> <body>. The text is
// never part of the command line the shell parses.
func DesktopCommand(command string) *Desktop {
	return &Desktop{name: "command " + command, argv: func(ev Event) []string {
		return []string{"/bin/sh", "-c", command + ` "$@"`, "hm", ev.Title, ev.Body}
	}}
}

// DetectDesktop finds the system's notifier: osascript on macOS (goos
// "darwin"), notify-send elsewhere; ok is false when lookPath finds none.
func DetectDesktop(goos string, lookPath func(string) (string, error)) (d *Desktop, ok bool) {
	if goos == "darwin" {
		path, err := lookPath("osascript")
		if err != nil {
			return nil, false
		}
		return &Desktop{name: path, argv: func(ev Event) []string {
			return []string{path, "-e", "display notification " + appleString(ev.Body) + " with title " + appleString(ev.Title)}
		}}, true
	}
	path, err := lookPath("notify-send")
	if err != nil {
		return nil, false
	}
	return &Desktop{name: path, argv: func(ev Event) []string {
		return []string{path, "--app-name=hm", ev.Title, ev.Body}
	}}, true
}

// appleString quotes s as an AppleScript string literal.
func appleString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Name is the command.
func (d *Desktop) Name() string { return d.name }

// Notify runs the command for ev and waits for it (at most
// commandTimeout).
func (d *Desktop) Notify(ctx context.Context, ev Event) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	argv := d.argv(ev)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", d.name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Terminal rings the bell and writes an OSC 9 notification (shown by
// iTerm2, kitty, WezTerm, Windows Terminal and others; ignored by the
// rest) and the event's line to the hub's terminal.
type Terminal struct {
	mu sync.Mutex
	w  io.Writer
}

// TerminalOf is a Terminal sink on f when f is a terminal; ok is false
// otherwise (a log file or a pipe gets no bells).
func TerminalOf(f *os.File) (t *Terminal, ok bool) {
	if f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return &Terminal{w: f}, true
}

// Name is "terminal".
func (t *Terminal) Name() string { return "terminal" }

// Notify writes BEL, OSC 9 with the title and body, and the line.
func (t *Terminal) Notify(_ context.Context, ev Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := fmt.Fprintf(t.w, "\a\x1b]9;%s: %s\x07%s\n", clip(ev.Title), clip(ev.Body), clip(ev.Line))
	return err
}

// SinkFunc is a Sink made of a function (the hub's Telegram line).
type SinkFunc struct {
	Label string
	Func  func(ctx context.Context, ev Event) error
}

// Name is Label.
func (s SinkFunc) Name() string { return s.Label }

// Notify calls Func.
func (s SinkFunc) Notify(ctx context.Context, ev Event) error { return s.Func(ctx, ev) }
