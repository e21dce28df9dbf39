package hub_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestRootSendsBrowserToCockpit: a browser opening the hub's address gets
// a redirect to the cockpit (it used to get "WebSocket protocol
// violation"), which answers; WebSocket clients still connect at /.
func TestRootSendsBrowserToCockpit(t *testing.T) {
	t.Parallel()
	h, _ := hubtest.Start(t, t.TempDir(), hub.Options{NoPanes: true})
	base := "http://127.0.0.1:" + strconv.Itoa(h.Port)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		name     string
		method   string
		path     string
		header   map[string]string
		code     int
		location string
	}{
		{"browser GET /", http.MethodGet, "/", map[string]string{"Accept": "text/html"}, http.StatusFound, "/ui/"},
		{"HEAD /", http.MethodHead, "/", nil, http.StatusFound, "/ui/"},
		{"GET / with a query", http.MethodGet, "/?x=1", nil, http.StatusFound, "/ui/"},
		{"POST / is no browser visit", http.MethodPost, "/", nil, http.StatusUpgradeRequired, ""},
		{"GET of another path", http.MethodGet, "/nothing", nil, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		req, err := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code || resp.Header.Get("Location") != tt.location {
			t.Errorf("%s: %d Location %q, want %d %q", tt.name, resp.StatusCode, resp.Header.Get("Location"), tt.code, tt.location)
		}
	}
	// Followed, the redirect lands on the cockpit's login page.
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/ui/" || resp.StatusCode == http.StatusUpgradeRequired {
		t.Errorf("GET / followed ends at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	cl, err := client.Dial(t.Context(), h.URL())
	if err != nil {
		t.Fatalf("WebSocket client at /: %v", err)
	}
	cl.Close()
}

// TestIdleHTTPConnectionsEnd: a connection that made one plain HTTP request
// and then sends nothing is closed by the hub (Options.IdleTimeout, 2 min by
// default). Before, with no idle timeout, any local peer could keep one of
// the hub's descriptors per connection forever.
func TestIdleHTTPConnectionsEnd(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: func(o *hub.Options) {
		noPanes(o)
		o.IdleTimeout = 300 * time.Millisecond
	}})
	addr := strings.TrimSuffix(strings.TrimPrefix(th.h.URL(), "ws://"), "/")
	for _, req := range []string{
		"GET /status HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", // refused: no token
		"GET / HTTP/1.1\r\nHost: " + addr + "\r\n\r\n",       // redirected to /ui/
		"GET /ui/ HTTP/1.1\r\nHost: " + addr + "\r\n\r\n",    // the cockpit's login
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		// Read the answer, then nothing more comes: the hub must hang up.
		if err := c.SetReadDeadline(time.Now().Add(poll.Floor)); err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%q: the idle connection was still open after %v", strings.Fields(req)[1], poll.Floor)
		}
	}
}
