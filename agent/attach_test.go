package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/agent/internal/vterm"
	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"

	"github.com/coder/websocket"
)

// attachServer serves AttachHandlerContext for the given panes on a real socket.
func attachServer(t *testing.T, panes map[string]*Pane) (wsBase string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	lookup := func(name string) (*Pane, bool) { p, ok := panes[name]; return p, ok }
	authorize := func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer secret" || r.URL.Query().Get("token") == "secret"
	}
	h := AttachHandlerContext(ctx, lookup, authorize, testLogger(t))
	// httptest's Close does not wait for hijacked (WebSocket) handlers:
	// wait for them, so that none logs to t after the test ended.
	var handlers sync.WaitGroup
	mux.Handle("/attach/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		h.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		cancel()
		srv.Close()
		handlers.Wait()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/attach/"
}

// client runs AttachClient in the background.
type client struct {
	out    testutil.SyncBuffer
	in     *io.PipeWriter
	resize chan [2]uint16
	cancel context.CancelFunc
	done   chan error
}

func attach(t *testing.T, url, token string, view bool) *client {
	t.Helper()
	return attachWith(t, url, token, view, [2]uint16{})
}

// attachWith is attach with the viewer's terminal size (zero: unknown).
func attachWith(t *testing.T, url, token string, view bool, size [2]uint16) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	c := &client{in: pw, resize: make(chan [2]uint16, 1), cancel: cancel, done: make(chan error, 1)}
	if size[0] > 0 {
		c.resize <- size
	}
	go func() { c.done <- AttachClient(ctx, url, token, view, pr, &c.out, c.resize) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("AttachClient did not return after cancel")
		}
	})
	return c
}

func (c *client) waitOutput(t *testing.T, want string) {
	t.Helper()
	poll.For(t, 15*time.Second, func() error { return poll.Want(strings.Contains(c.out.String(), want), "attach output %s", want) })
}

// waitScreen waits until the text a person would see in a terminal of the
// pane's default size (the client's output fed through a virtual terminal)
// contains want.
func (c *client) waitScreen(t *testing.T, want string) {
	t.Helper()
	poll.For(t, 15*time.Second, func() error {
		vt := vterm.New(DefaultCols, DefaultRows)
		vt.Write([]byte(c.out.String()))
		return poll.Want(strings.Contains(vt.String(), want), "viewer screen %q contains %q", vt.String(), want)
	})
}

func TestAttach(t *testing.T) {
	t.Parallel()
	spec, logPath := fakeSpec(t, "FAKEAGENT_ECHO=1", "FAKEAGENT_ENTER_MS=0")
	p := startPane(t, spec)
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), "fakeagent ready"), "banner") })
	base := attachServer(t, map[string]*Pane{"builder": p, "2": p})

	// Interactive client: gets the replay, then live output, and can type.
	c1 := attach(t, base+"builder", "secret", false)
	c1.waitOutput(t, "fakeagent ready")
	// Two read-only viewers at once.
	v1 := attach(t, base+"2?token=secret", "", true)
	v2 := attach(t, base+"builder", "secret", true)
	v1.waitOutput(t, "fakeagent ready")
	v2.waitOutput(t, "fakeagent ready")

	if _, err := v1.in.Write([]byte("viewer-typed\r")); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.in.Write([]byte("hello-from-attach\r")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{c1, v1, v2} {
		c.waitOutput(t, "received 17 bytes: hello-from-attach")
	}
	prompts := readPrompts(t, logPath)
	if len(prompts) != 1 || prompts[0].Prompt != "hello-from-attach" {
		t.Errorf("prompts = %+v; the viewer must not be able to type", prompts)
	}

	// Resize from the interactive client; a viewer's resize is ignored.
	c1.resize <- [2]uint16{101, 31}
	poll.For(t, 10*time.Second, func() error {
		cols, rows := paneSize(p)
		return poll.Want(cols == 101 && rows == 31, "resize")
	})
	v1.resize <- [2]uint16{50, 10}
	if _, err := c1.in.Write([]byte("sync\r")); err != nil { // frames are ordered: after this the resize was handled
		t.Fatal(err)
	}
	c1.waitOutput(t, "received 4 bytes: sync")
	if cols, rows := paneSize(p); cols != 101 || rows != 31 {
		t.Errorf("viewer resized the pane to %dx%d", cols, rows)
	}

	// Ctrl-\ detaches the local user.
	if _, err := c1.in.Write([]byte{DetachKey}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c1.done:
		if err != nil {
			t.Errorf("detach returned %v", err)
		}
		c1.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-\\ did not detach")
	}

	// Stopping the pane ends remaining sessions.
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*client{v1, v2} {
		select {
		case err := <-v.done:
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("viewer ended with %v, want going-away close", err)
			}
			v.done <- err
		case <-time.After(10 * time.Second):
			t.Fatal("viewer still attached after Stop")
		}
	}
}

// paneSize reads the terminal size of the pane's program.
func paneSize(p *Pane) (cols, rows uint16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cols, p.rows
}

func TestAttachRefusals(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: "exec sleep 300"})
	base := attachServer(t, map[string]*Pane{"builder": p})
	tests := []struct {
		name    string
		url     string
		token   string
		want    error
		wantMsg string
	}{
		{"unknown pane", base + "nosuch", "secret", ErrUnknownPane, `unknown pane "nosuch"`},
		{"no pane name", base, "secret", ErrUnknownPane, "unknown pane"},
		{"bad token", base + "builder", "wrong", ErrUnauthorized, "unauthorized"},
		{"no token", base + "builder", "", ErrUnauthorized, "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := contextWithTimeout(10 * time.Second)
			defer cancel()
			err := AttachClient(ctx, tc.url, tc.token, false, nil, io.Discard, nil)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("AttachClient = %v, want %v mentioning %q", err, tc.want, tc.wantMsg)
			}
		})
	}
	// Plain HTTP sees the status codes too.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	httpBase := "http" + strings.TrimPrefix(base, "ws")
	for _, tc := range []struct {
		url    string
		status int
	}{
		{httpBase + "nosuch?token=secret", http.StatusNotFound},
		{httpBase + "builder", http.StatusUnauthorized},
	} {
		resp, err := hc.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(body) == 0 {
			t.Errorf("GET %s = %d %q, want %d with a message", tc.url, resp.StatusCode, body, tc.status)
		}
	}
	// A browser page from another origin is refused.
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, base+"builder?token=secret", &websocket.DialOptions{
		HTTPClient: hc,
		HTTPHeader: http.Header{"Origin": {"http://evil.example"}},
	})
	if err == nil {
		c.CloseNow()
		t.Fatal("cross-origin attach accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin attach: %v, want 403", err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	hc.CloseIdleConnections()
}

func TestAttachViewOnlyCannotType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startPane(t, Spec{Command: "exec /bin/sh", Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "PS1=$ ", "HOME=" + dir}})
	base := attachServer(t, map[string]*Pane{"builder": p})
	v := attach(t, base+"builder?token=secret", "", true)
	v.waitScreen(t, "$")
	if _, err := v.in.Write([]byte("touch viewer-was-here\r")); err != nil {
		t.Fatal(err)
	}
	// The shell itself still works: an interactive client's command runs
	// and its output reaches the viewer.
	c := attach(t, base+"builder", "secret", false)
	c.waitScreen(t, "$")
	if _, err := c.in.Write([]byte("echo interactive-$((6*7))\r")); err != nil {
		t.Fatal(err)
	}
	v.waitOutput(t, "interactive-42")
	if _, err := os.Stat(dir + "/viewer-was-here"); err == nil {
		t.Error("view-only client typed into the pane")
	}
	if strings.Contains(string(p.Replay()), "viewer-was-here") {
		t.Error("view-only input reached the pane")
	}
}

func TestAttachHubShutdown(t *testing.T) {
	t.Parallel()
	p := startPane(t, Spec{Command: "echo up; exec sleep 300"})
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(AttachHandlerContext(ctx, func(string) (*Pane, bool) { return p, true }, nil, testLogger(t)))
	defer srv.Close()
	c := attach(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/attach/builder", "", true)
	c.waitOutput(t, "up")
	cancel() // the hub shuts down
	select {
	case err := <-c.done:
		if websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Errorf("client ended with %v, want going-away", err)
		}
		c.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("session survived hub shutdown")
	}
}
