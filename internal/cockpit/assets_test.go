package cockpit_test

import (
	"net/http"
	"strings"
	"testing"

	"hm/internal/cockpit"
)

// TestPageHeaders: the page and every other cockpit answer carry no-store,
// nosniff and the strict CSP; the page is web/index.html; only GET and
// HEAD read files; directories and missing files are 404.
func TestPageHeaders(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c, _ := loginSession(t, base, testOperatorToken)
	anon := noRedirectClient(t, nil)
	for _, tc := range []struct {
		client *http.Client
		method string
		path   string
		status int
		ctype  string
	}{
		{c, http.MethodGet, "/ui/", http.StatusOK, "text/html; charset=utf-8"},
		{c, http.MethodGet, "/ui/index.html", http.StatusOK, "text/html; charset=utf-8"},
		{c, http.MethodHead, "/ui/", http.StatusOK, "text/html; charset=utf-8"},
		{c, http.MethodPost, "/ui/", http.StatusMethodNotAllowed, "text/html; charset=utf-8"},
		{c, http.MethodGet, "/ui/no-such-file.js", http.StatusNotFound, "text/html; charset=utf-8"},
		{c, http.MethodGet, "/ui/vendor/", http.StatusNotFound, "text/html; charset=utf-8"},
		{c, http.MethodGet, "/ui/api/status", http.StatusOK, "application/json"},
		{c, http.MethodPost, "/ui/api/status", http.StatusMethodNotAllowed, "application/json"},
		{c, http.MethodGet, "/ui/api/handoff", http.StatusOK, "application/json"},
		{c, http.MethodGet, "/ui/api/verify?id=m-1", http.StatusOK, "application/json"},
		{c, http.MethodGet, "/ui/api/verify?id=m-2", http.StatusNotFound, "application/json"},
		{anon, http.MethodGet, "/ui/", http.StatusUnauthorized, "text/html; charset=utf-8"},
		{anon, http.MethodGet, "/ui/login?code=x", http.StatusUnauthorized, "text/html; charset=utf-8"},
		{anon, http.MethodPost, "/ui/code", http.StatusUnauthorized, "application/json"},
	} {
		resp, body := doReq(t, tc.client, tc.method, base+tc.path, nil)
		h := resp.Header
		if resp.StatusCode != tc.status || h.Get("Content-Type") != tc.ctype {
			t.Errorf("%s %s: %s %q, want %d %q", tc.method, tc.path, resp.Status, h.Get("Content-Type"), tc.status, tc.ctype)
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != cockpit.CSP {
			t.Errorf("%s %s: headers %v", tc.method, tc.path, h)
		}
		if tc.method == http.MethodGet && tc.path == "/ui/" && !strings.Contains(body, "<html") {
			t.Errorf("GET /ui/: %.200s", body)
		}
	}
	if !strings.Contains(cockpit.CSP, "default-src 'self'") || !strings.Contains(cockpit.CSP, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", cockpit.CSP)
	}
	// /ui redirects to the page.
	resp, _ := doReq(t, c, http.MethodGet, base+"/ui", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %s %q", resp.Status, resp.Header.Get("Location"))
	}
}
