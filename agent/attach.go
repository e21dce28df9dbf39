package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

const (
	// attachReadLimit bounds one client frame.
	attachReadLimit = 1 << 20
	// attachWriteTimeout drops a viewer that does not take output.
	attachWriteTimeout = 10 * time.Second
)

// ResizeFrame is the text frame that resizes an attached pane:
// {"type":"resize","cols":C,"rows":R}.
type ResizeFrame struct {
	Type string `json:"type"`
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// parseControlFrame decodes a client text frame; ok is false for anything
// but a valid resize.
func parseControlFrame(b []byte) (cols, rows uint16, ok bool) {
	var f ResizeFrame
	if err := json.Unmarshal(b, &f); err != nil || f.Type != "resize" || f.Cols == 0 || f.Rows == 0 {
		return 0, 0, false
	}
	return f.Cols, f.Rows, true
}

// AttachHandlerContext serves ws://.../attach/<pane> (SPEC §5.4). authorize
// (nil: everyone) decides access: false gives HTTP 401. An unknown pane gives
// HTTP 404. Browser cross-origin requests are refused. The first server frame
// is the pane's current screen rendered from its virtual terminal at the
// viewer's size (?cols=C&rows=R, default the pane's size; see
// vterm.Terminal.Render), then live output follows as binary frames; client
// binary frames are typed into the pane, a text frame
// {"type":"resize","cols":C,"rows":R} resizes it, and "?mode=view" makes the
// connection read-only. Sessions end when the client leaves, the request
// context ends, the pane stops or ctx is cancelled; a hub cancels ctx on
// shutdown because http.Server.Shutdown does not end hijacked (WebSocket)
// connections.
func AttachHandlerContext(ctx context.Context, lookup func(name string) (*Pane, bool), authorize func(r *http.Request) bool, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &attachHandler{base: ctx, lookup: lookup, authorize: authorize, log: logger}
}

type attachHandler struct {
	base      context.Context
	lookup    func(string) (*Pane, bool)
	authorize func(*http.Request) bool
	log       *slog.Logger
}

// paneFromPath extracts <pane> from ".../attach/<pane>" (or "/<pane>" when
// the prefix was stripped).
func paneFromPath(path string) string {
	if i := strings.LastIndex(path, "/attach/"); i >= 0 {
		path = path[i+len("/attach/"):]
	}
	return strings.Trim(path, "/")
}

func (h *attachHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.authorize != nil && !h.authorize(r) {
		http.Error(w, "unauthorized: attach needs the hub token (Authorization: Bearer <token> or ?token=)", http.StatusUnauthorized)
		return
	}
	name := paneFromPath(r.URL.Path)
	p, ok := (*Pane)(nil), false
	if name != "" && h.lookup != nil {
		p, ok = h.lookup(name)
	}
	if !ok || p == nil {
		http.Error(w, fmt.Sprintf("unknown pane %q: no hosted pane has that role or id", name), http.StatusNotFound)
		return
	}
	view := r.URL.Query().Get("mode") == "view"
	c, err := websocket.Accept(w, r, nil) // default: same-origin only
	if err != nil {
		h.log.Info("attach refused", "pane", name, "remote", r.RemoteAddr, "err", err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(attachReadLimit)
	log := h.log.With("pane", name, "remote", r.RemoteAddr, "view", view)
	log.Info("attached")
	defer log.Info("detached")

	// connCtx bounds reads and writes; cancelling it closes the connection,
	// so it ends only when this handler returns.
	connCtx, cancelConn := context.WithCancel(r.Context())
	readDone := make(chan struct{})
	defer func() {
		cancelConn()
		<-readDone
	}()

	cols, rows := viewerSize(r, p)
	screen, sub, unsubscribe := p.subscribeScreen(cols, rows)
	defer unsubscribe()
	if !view {
		// This viewer's own terminal answers the program's queries now.
		defer p.addTypist()()
	}

	go func() {
		defer close(readDone)
		h.readInput(connCtx, c, p, view, log)
	}()

	if err := writeFrame(connCtx, c, screen); err != nil {
		return
	}
	for {
		select {
		case chunk, ok := <-sub.ch:
			if !ok {
				code := websocket.StatusGoingAway
				if sub.reason != "pane stopped" {
					code = websocket.StatusTryAgainLater
				}
				c.Close(code, sub.reason)
				return
			}
			if err := writeFrame(connCtx, c, chunk); err != nil {
				return
			}
		case <-readDone:
			return // the client left
		case <-connCtx.Done():
			return
		case <-h.base.Done():
			c.Close(websocket.StatusGoingAway, "hub shutting down")
			return
		}
	}
}

// viewerSize reads the viewer's terminal size from ?cols=C&rows=R; the
// pane's size when absent or invalid.
func viewerSize(r *http.Request, p *Pane) (cols, rows int) {
	p.mu.Lock()
	cols, rows = int(p.cols), int(p.rows)
	p.mu.Unlock()
	q := r.URL.Query()
	if c, err := strconv.Atoi(q.Get("cols")); err == nil && c > 0 && c <= maxViewerDim {
		cols = c
	}
	if n, err := strconv.Atoi(q.Get("rows")); err == nil && n > 0 && n <= maxViewerDim {
		rows = n
	}
	return cols, rows
}

// maxViewerDim bounds a viewer's declared size.
const maxViewerDim = 1000

// writeFrame sends one binary frame with a timeout.
func writeFrame(ctx context.Context, c *websocket.Conn, b []byte) error {
	wctx, cancel := context.WithTimeout(ctx, attachWriteTimeout)
	defer cancel()
	return c.Write(wctx, websocket.MessageBinary, b)
}

// readInput handles client frames until the connection ends.
func (h *attachHandler) readInput(ctx context.Context, c *websocket.Conn, p *Pane, view bool, log *slog.Logger) {
	var keys keyScanner // this person's keys (see typeFromViewer)
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) {
				log.Debug("attach read ended", "err", err)
			}
			return
		}
		if view {
			continue
		}
		switch typ {
		case websocket.MessageBinary:
			if _, err := p.typeFromViewer(ctx, &keys, data); err != nil {
				log.Debug("attach input not written", "err", err)
			}
		case websocket.MessageText:
			cols, rows, ok := parseControlFrame(data)
			if !ok {
				log.Debug("attach: ignored text frame", "len", len(data))
				continue
			}
			if err := p.Resize(cols, rows); err != nil {
				log.Debug("attach resize", "err", err)
			}
		}
	}
}
