package cockpit_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/internal/cockpit"
)

// TestLoginCodeOnce: a code logs in once; the second use, an unknown and a
// malformed code get 401 with the page that says to run hm ui again.
func TestLoginCodeOnce(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c := noRedirectClient(t, newCookieJar(t))
	cr := loginCode(t, c, base, testOperatorToken)
	if len(cr.Code) != 32 || cr.URL != "http://127.0.0.1:4242/ui/login?code="+cr.Code {
		t.Fatalf("code answer %+v", cr)
	}
	if _, err := time.Parse(time.RFC3339, cr.ExpiresAt); err != nil {
		t.Fatalf("expiresAt %q: %v", cr.ExpiresAt, err)
	}
	for _, m := range []string{http.MethodHead, http.MethodPost} {
		if resp, _ := doReq(t, c, m, base+"/ui/login?code="+cr.Code, nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /ui/login: %s, want 405 (and the code kept)", m, resp.Status)
		}
	}
	resp, body := doReq(t, c, http.MethodGet, base+"/ui/login?code="+cr.Code, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("first use: %s Location %q %s", resp.Status, resp.Header.Get("Location"), body)
	}
	for name, q := range map[string]string{
		"second use": cr.Code,
		"unknown":    strings.Repeat("a", 32),
		"malformed":  "../../etc",
		"empty":      "",
	} {
		resp, body := doReq(t, c, http.MethodGet, base+"/ui/login?code="+q, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "hm ui") || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s: %s %q Set-Cookie %q", name, resp.Status, body, resp.Header.Get("Set-Cookie"))
		}
	}
}

// TestLoginCodeExpires: a code older than two minutes gets 401; one just
// under two minutes still works.
func TestLoginCodeExpires(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(clk.Now)))
	c := noRedirectClient(t, newCookieJar(t))
	fresh := loginCode(t, c, base, testOperatorToken)
	stale := loginCode(t, c, base, testOperatorToken)
	if want := clk.Now().Add(cockpit.CodeTTL).UTC().Format(time.RFC3339); stale.ExpiresAt != want {
		t.Errorf("expiresAt %s, want %s", stale.ExpiresAt, want)
	}
	clk.Advance(cockpit.CodeTTL - time.Second)
	if resp, body := doReq(t, c, http.MethodGet, base+"/ui/login?code="+fresh.Code, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("code 1 s before expiry: %s %s", resp.Status, body)
	}
	clk.Advance(time.Second)
	if resp, body := doReq(t, c, http.MethodGet, base+"/ui/login?code="+stale.Code, nil); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "hm ui") {
		t.Fatalf("expired code: %s %s", resp.Status, body)
	}
}

// TestSessionCookie: the cookie is a 256-bit id, HttpOnly, SameSite=Strict,
// Path=/ui, with no Max-Age or Expires; it opens the page.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c := noRedirectClient(t, nil)
	cr := loginCode(t, c, base, testOperatorToken)
	resp, _ := doReq(t, c, http.MethodGet, base+"/ui/login?code="+cr.Code, nil)
	raw := resp.Header.Values("Set-Cookie")
	if len(raw) != 1 {
		t.Fatalf("Set-Cookie %q", raw)
	}
	ck, err := http.ParseSetCookie(raw[0])
	if err != nil {
		t.Fatal(err)
	}
	if ck.Name != cockpit.CookieName || len(ck.Value) != 64 || ck.Path != "/ui" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode ||
		ck.MaxAge != 0 || !ck.Expires.IsZero() || ck.Secure || ck.Domain != "" {
		t.Fatalf("cookie %q parsed as %+v", raw[0], ck)
	}
	for _, attr := range []string{"Path=/ui", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(raw[0], attr) {
			t.Errorf("Set-Cookie %q lacks %s", raw[0], attr)
		}
	}
	page, body := doReq(t, c, http.MethodGet, base+"/ui/", map[string]string{"Cookie": ck.Name + "=" + ck.Value})
	if page.StatusCode != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("page with the cookie: %s %.200s", page.Status, body)
	}
}

// cookieRoutes are the routes behind the cookie; ws marks WebSocket upgrades.
var cookieRoutes = []struct {
	path string
	api  bool
	ws   bool
}{
	{path: "/ui/"},
	{path: "/ui/index.html"},
	{path: "/ui/app.js"},
	{path: "/ui/vendor/xterm/xterm.js"},
	{path: "/ui/nonexistent"},
	{path: "/ui/api/status", api: true},
	{path: "/ui/api/handoff", api: true},
	{path: "/ui/api/verify", api: true},
	{path: "/ui/api/verify?id=m-1", api: true},
	{path: "/ui/api/nope", api: true},
	{path: "/ui/ws", ws: true},
	{path: "/ui/attach/architect?cols=80&rows=24", ws: true},
}

// TestRoutesNeedCookie: every route but code and login answers 401
// without a session cookie, with a made-up one or with a login code in
// its place (JSON under /ui/api/, HTML elsewhere; WebSockets before the
// upgrade), and lets the request through with a valid one.
func TestRoutesNeedCookie(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	authed, ck := loginSession(t, base, testOperatorToken)
	anon := noRedirectClient(t, nil)
	for _, rt := range cookieRoutes {
		for name, cookie := range map[string]string{
			"none":   "",
			"forged": cockpit.CookieName + "=" + strings.Repeat("0", 64),
			"short":  cockpit.CookieName + "=abc",
			"other":  "session=" + ck.Value,
		} {
			hdr := map[string]string{}
			if cookie != "" {
				hdr["Cookie"] = cookie
			}
			if rt.ws {
				opts := &websocket.DialOptions{HTTPClient: anon, HTTPHeader: http.Header{}}
				if cookie != "" {
					opts.HTTPHeader.Set("Cookie", cookie)
				}
				conn, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(base, "http")+rt.path, opts)
				if err == nil {
					conn.CloseNow()
				}
				if resp == nil || resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s cookie %s: WebSocket dial %v, response %v", rt.path, name, err, resp)
				}
				continue
			}
			resp, body := doReq(t, anon, http.MethodGet, base+rt.path, hdr)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s cookie %s: %s, want 401", rt.path, name, resp.Status)
			}
			wantType := "text/html; charset=utf-8"
			if rt.api {
				wantType = "application/json"
				if !strings.HasPrefix(body, `{"error":`) {
					t.Errorf("%s: body %q, want {\"error\":...}", rt.path, body)
				}
			}
			if got := resp.Header.Get("Content-Type"); got != wantType {
				t.Errorf("%s: Content-Type %q, want %q", rt.path, got, wantType)
			}
		}
		// With the session the cockpit lets it through (the fake
		// WebSocket handlers answer 299; missing files are 404).
		resp, _ := doReq(t, authed, http.MethodGet, base+rt.path, nil)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			t.Errorf("%s with the session: %s", rt.path, resp.Status)
		}
		if rt.ws && resp.StatusCode != 299 {
			t.Errorf("%s with the session did not reach the WebSocket handler: %s", rt.path, resp.Status)
		}
	}
}

// TestBrowserChecks: a cross-site Origin, a cross-site Sec-Fetch-Site or a
// non-loopback Host get 403 on every route, login included, and on the
// WebSockets, even with a valid session; same-origin requests pass.
func TestBrowserChecks(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c, _ := loginSession(t, base, testOperatorToken)
	host := strings.TrimPrefix(base, "http://")
	routes := append([]struct {
		path string
		api  bool
		ws   bool
	}{{path: "/ui/login?code=" + strings.Repeat("b", 32)}}, cookieRoutes...)
	refused := []struct {
		name string
		hdr  map[string]string
	}{
		{"other origin", map[string]string{"Origin": "http://evil.example"}},
		{"other port", map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"https origin", map[string]string{"Origin": "https://" + host}},
		{"null origin", map[string]string{"Origin": "null"}},
		{"localhost origin for 127.0.0.1", map[string]string{"Origin": "http://localhost:" + strings.Split(host, ":")[1]}},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site fetch", map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"rebinding host", map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}},
		{"rebinding host with matching origin", map[string]string{"Host": "evil.example", "Origin": "http://evil.example"}},
	}
	for _, rt := range routes {
		for _, tc := range refused {
			if rt.ws {
				hdr := http.Header{}
				for k, v := range tc.hdr {
					hdr.Set(k, v)
				}
				opts := &websocket.DialOptions{HTTPClient: c, HTTPHeader: hdr}
				if h := tc.hdr["Host"]; h != "" {
					opts.Host = h
				}
				conn, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(base, "http")+rt.path, opts)
				if err == nil {
					conn.CloseNow()
				}
				if resp == nil || resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s: WebSocket dial %v, response %v", rt.path, tc.name, err, resp)
				}
				continue
			}
			resp, body := doReq(t, c, http.MethodGet, base+rt.path, tc.hdr)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s: %s %.100s, want 403", rt.path, tc.name, resp.Status, body)
			}
			if rt.api && !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("%s %s: body %q", rt.path, tc.name, body)
			}
		}
	}
	for _, hdr := range []map[string]string{
		{"Origin": base},
		{"Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
		{"Origin": base, "Sec-Fetch-Site": "same-origin"},
	} {
		if resp, body := doReq(t, c, http.MethodGet, base+"/ui/api/status", hdr); resp.StatusCode != http.StatusOK {
			t.Errorf("same-origin %v: %s %s", hdr, resp.Status, body)
		}
	}
}

// TestCodeEndpoint: POST /ui/code needs the operator token and no Origin.
func TestCodeEndpoint(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c := noRedirectClient(t, nil)
	for _, tc := range []struct {
		name   string
		method string
		hdr    map[string]string
		want   int
	}{
		{"no token", http.MethodPost, nil, http.StatusUnauthorized},
		{"empty bearer", http.MethodPost, map[string]string{"Authorization": "Bearer "}, http.StatusUnauthorized},
		{"wrong token", http.MethodPost, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"basic auth", http.MethodPost, map[string]string{"Authorization": "Basic " + testOperatorToken}, http.StatusUnauthorized},
		{"same origin", http.MethodPost, map[string]string{"Authorization": "Bearer " + testOperatorToken, "Origin": base}, http.StatusForbidden},
		{"other origin", http.MethodPost, map[string]string{"Authorization": "Bearer " + testOperatorToken, "Origin": "http://evil.example"}, http.StatusForbidden},
		{"GET", http.MethodGet, map[string]string{"Authorization": "Bearer " + testOperatorToken}, http.StatusMethodNotAllowed},
		{"ok", http.MethodPost, map[string]string{"Authorization": "Bearer " + testOperatorToken}, http.StatusOK},
	} {
		resp, body := doReq(t, c, tc.method, base+"/ui/code", tc.hdr)
		if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %s (%s), want %d", tc.name, resp.Status, body, resp.Header.Get("Content-Type"), tc.want)
		}
		if tc.want != http.StatusOK && strings.Contains(body, `"code"`) {
			t.Errorf("%s: a refusal carries a code: %s", tc.name, body)
		}
	}
}

// TestTossedCookie: another site on 127.0.0.1 (any port: cookies ignore
// ports) can set an hm_ui cookie of its own with a longer path, which the
// browser sends before the real one. A well-formed but unknown id in front
// must not hide the live session. It did: the first well-formed hm_ui
// cookie was the only one checked, so the cockpit answered 401 to its
// logged-in operator.
func TestTossedCookie(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	_, ck := loginSession(t, base, testOperatorToken)
	anon := noRedirectClient(t, nil)
	fake := cockpit.CookieName + "=" + strings.Repeat("0", 64)
	real := cockpit.CookieName + "=" + ck.Value
	for _, tc := range []struct {
		name, cookie string
		want         int
	}{
		{"real alone", real, http.StatusOK},
		{"tossed first", fake + "; " + real, http.StatusOK},
		{"tossed last", real + "; " + fake, http.StatusOK},
		{"malformed first", cockpit.CookieName + "=x; " + real, http.StatusOK},
		{"tossed alone", fake, http.StatusUnauthorized},
		{"two tossed", fake + "; " + cockpit.CookieName + "=" + strings.Repeat("1", 64), http.StatusUnauthorized},
	} {
		for _, path := range []string{"/ui/api/status", "/ui/"} {
			resp, body := doReq(t, anon, http.MethodGet, base+path, map[string]string{"Cookie": tc.cookie})
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s: %s %.100s, want %d", tc.name, path, resp.Status, body, tc.want)
			}
		}
	}
}
