package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/term"
)

// DetachKey (Ctrl-\) typed locally ends an AttachClient session.
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
// value received from resize is sent as a resize frame. Raw mode is the
// caller's business (see RawMode). in is read by a helper goroutine: when in
// has read deadlines (an *os.File in non-blocking mode, a net.Conn) the
// goroutine is released on return, otherwise it ends at in's next Read.
func AttachClient(ctx context.Context, url string, token string, view bool, in io.Reader, out io.Writer, resize <-chan [2]uint16) error {
	u, err := attachURL(url, view)
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
	defer c.CloseNow()
	c.SetReadLimit(attachReadLimit)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	readErr := make(chan error, 1)
	go func() {
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
		case sz, ok := <-resize:
			if !ok {
				resize = nil
				continue
			}
			b, _ := json.Marshal(ResizeFrame{Type: "resize", Cols: sz[0], Rows: sz[1]})
			if err := c.Write(ctx, websocket.MessageText, b); err != nil {
				return fmt.Errorf("attach resize: %w", err)
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

// errDetach marks the local detach key.
var errDetach = errors.New("detach")

// pumpInput sends local input until Ctrl-\ (errDetach), EOF or an error.
func pumpInput(ctx context.Context, c *websocket.Conn, view bool, in io.Reader) error {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			i := bytes.IndexByte(chunk, DetachKey)
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

// attachURL checks the URL and adds mode=view when asked.
func attachURL(raw string, view bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("attach url: %w", err)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return "", fmt.Errorf("attach url %q: scheme must be ws or wss", raw)
	}
	if view {
		q := u.Query()
		q.Set("mode", "view")
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
