package hub_test

import (
	"net/http"
	"strconv"
	"testing"

	"hm/internal/client"
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
