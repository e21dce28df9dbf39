package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/term"
)

// DetachKey (Ctrl-\) typed locally ends an AttachClient session; so does
// Ctrl-\ in the kitty keyboard protocol's or xterm's modifyOtherKeys
// encoding, which a pane program may have switched the person's terminal to.
const DetachKey = 0x1c

// Attach client errors.
var (
	// ErrUnauthorized: the hub refused the token (HTTP 401).
	ErrUnauthorized = errors.New("attach refused: unauthorized")
	// ErrUnknownPane: the hub has no such pane (HTTP 404).
	ErrUnknownPane = errors.New("attach refused: unknown pane")
)

// AttachClient connects to an attach URL (ws://127.0.0.1:N/attach/<pane>)
// and relays until the user detaches with Ctrl-\ (nil), the server closes the
// session normally (nil), ctx ends (ctx's error) or the connection fails.
// Output frames go to out; bytes read from in are typed into the pane
// (unless view, which adds ?mode=view and only watches for Ctrl-\); each
// value received from resize is sent as a resize frame, and one already
// waiting when AttachClient is called also tells the hub the viewer's size
// (?cols=C&rows=R) so that the first frame, the pane's screen, fits it. When
// the session ends, RestoreTerminal is written to out. Raw mode is the
// caller's business (see RawMode). in is read by a helper goroutine: when in
// has read deadlines (an *os.File in non-blocking mode, a net.Conn) the
// goroutine is released on return, otherwise it ends at in's next Read.
func AttachClient(ctx context.Context, url string, token string, view bool, in io.Reader, out io.Writer, resize <-chan [2]uint16) error {
	// A size already waiting is the viewer's: the hub renders the screen
	// for it, and it is sent as the first resize frame too.
	var size [2]uint16
	var first <-chan [2]uint16
	select {
	case sz, ok := <-resize:
		if ok {
			size = sz
			ch := make(chan [2]uint16, 1)
			ch <- sz
			first = ch
		} else {
			resize = nil
		}
	default:
	}
	u, err := attachURL(url, view, size)
	if err != nil {
		return err
	}
	opts := &websocket.DialOptions{}
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	c, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		return dialError(u, resp, err)
	}
	c.SetReadLimit(attachReadLimit)

	ctx, cancel := context.WithCancel(ctx)
	readErr := make(chan error, 1)
	readDone := make(chan struct{})
	defer func() {
		cancel()
		c.CloseNow()
		<-readDone
		// Leave the person's terminal as it was before the pane's program
		// changed it: main screen, cursor shown, modes and attributes reset.
		_, _ = io.WriteString(out, RestoreTerminal)
	}()
	go func() {
		defer close(readDone)
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			if typ != websocket.MessageBinary {
				continue
			}
			if _, err := out.Write(data); err != nil {
				readErr <- fmt.Errorf("attach output: %w", err)
				return
			}
		}
	}()

	detach := make(chan struct{})
	inErr := make(chan error, 1)
	if in != nil {
		go func() {
			err := pumpInput(ctx, c, view, in)
			if errors.Is(err, errDetach) {
				close(detach)
				return
			}
			inErr <- err
		}()
		defer releaseReader(in)
	}

	for {
		select {
		case <-ctx.Done():
			c.Close(websocket.StatusNormalClosure, "client leaving")
			return ctx.Err()
		case <-detach:
			c.Close(websocket.StatusNormalClosure, "detached")
			return nil
		case err := <-inErr:
			if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
				return fmt.Errorf("attach input: %w", err)
			}
			inErr = nil // input ended: keep showing output
		case sz := <-first:
			first = nil
			if err := sendResize(ctx, c, sz); err != nil {
				return err
			}
		case sz, ok := <-resize:
			if !ok {
				resize = nil
				continue
			}
			if err := sendResize(ctx, c, sz); err != nil {
				return err
			}
		case err := <-readErr:

			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure:
				return nil
			case websocket.StatusGoingAway:
				return fmt.Errorf("attach ended: %w", err)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("attach: %w", err)
		}
	}
}

// RestoreTerminal is written to the output when an AttachClient session
// ends: leave the alternate screen, show the cursor, switch off bracketed
// paste, application cursor keys and keypad, mouse reporting, focus events
// and the kitty keyboard protocol, reset attributes.
const RestoreTerminal = "\x1b[?1049l\x1b[?25h\x1b[?2004l\x1b[?1l\x1b>" +
	"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[<u\x1b[0m"

// sendResize sends one resize frame.
func sendResize(ctx context.Context, c *websocket.Conn, sz [2]uint16) error {
	b, _ := json.Marshal(ResizeFrame{Type: "resize", Cols: sz[0], Rows: sz[1]})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("attach resize: %w", err)
	}
	return nil
}

// errDetach marks the local detach key.
var errDetach = errors.New("detach")

// pumpInput sends local input until Ctrl-\ (errDetach, however the
// terminal encodes it: see detachIndex), EOF or an error.
func pumpInput(ctx context.Context, c *websocket.Conn, view bool, in io.Reader) error {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			i := detachIndex(chunk)
			if i >= 0 {
				chunk = chunk[:i]
			}
			if len(chunk) > 0 && !view {
				if werr := c.Write(ctx, websocket.MessageBinary, chunk); werr != nil {
					return werr
				}
			}
			if i >= 0 {
				return errDetach
			}
		}
		if err != nil {
			return err
		}
	}
}

// releaseReader unblocks a pending Read on in when it supports deadlines.
func releaseReader(in io.Reader) {
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(time.Now())
	}
}

// attachURL checks the URL and adds mode=view when asked and the viewer's
// size when known.
func attachURL(raw string, view bool, size [2]uint16) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("attach url: %w", err)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return "", fmt.Errorf("attach url %q: scheme must be ws or wss", raw)
	}
	q := u.Query()
	if view {
		q.Set("mode", "view")
	}
	if size[0] > 0 && size[1] > 0 {
		q.Set("cols", strconv.Itoa(int(size[0])))
		q.Set("rows", strconv.Itoa(int(size[1])))
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// dialError turns a refused handshake into a clear error.
func dialError(u string, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("attach %s: %w", redact(u), err)
	}
	var msg string
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		msg = strings.TrimSpace(string(b))
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", ErrUnauthorized, msg)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrUnknownPane, msg)
	}
	return fmt.Errorf("attach %s: HTTP %d %s: %w", redact(u), resp.StatusCode, msg, err)
}

// redact hides a token in a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if q.Has("token") {
		q.Set("token", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// RawMode puts the terminal fd in raw mode (no echo, no line editing, no
// signal keys, 8-bit) and returns a function restoring the previous mode.
func RawMode(fd int) (restore func(), err error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("raw mode: %w", err)
	}
	return func() { _ = term.Restore(fd, old) }, nil
}

// TerminalSize returns the size of the terminal fd (for the first resize).
func TerminalSize(fd int) (cols, rows uint16, err error) {
	w, h, err := term.GetSize(fd)
	if err != nil {
		return 0, 0, fmt.Errorf("terminal size: %w", err)
	}
	return clampDim(w), clampDim(h), nil
}

// clampDim converts a terminal dimension to the uint16 the PTY protocol uses.
func clampDim(n int) uint16 {
	switch {
	case n < 0:
		return 0
	case n > 0xffff:
		return 0xffff
	}
	return uint16(n)
}

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	return term.IsTerminal(fd)
}
