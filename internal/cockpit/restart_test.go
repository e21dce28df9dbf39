package cockpit_test

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"hm/internal/ground/layout"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestSessionSurvivesHubRestart: issue #17 asks that a page left open
// across a hub restart reconnects and resumes. Its session cookie must
// still be good for the new hub process (same root): the API answers and
// /ui/ws registers. Before, sessions lived only in the hub's memory and
// every open page was logged out (401) by a restart. A new operator
// token (hm token rotate) ends every session.
func TestSessionSurvivesHubRestart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	h1, stop1 := hubtest.Start(t, root, hub.Options{NoPanes: true})
	tok, err := lay.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	_, cookie := loginSession(t, "http://127.0.0.1:"+strconv.Itoa(h1.Port), tok)
	stop1()
	// What is kept on disk is private and is not the cookie.
	fi, err := os.Stat(lay.CockpitSessions())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", lay.CockpitSessions(), fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(lay.CockpitSessions()); strings.Contains(string(data), cookie.Value) {
		t.Errorf("%s holds the session id itself", lay.CockpitSessions())
	}

	// status GETs /ui/api/status of h with the cookie only.
	status := func(h *hub.Hub) int {
		t.Helper()
		resp, body := doReq(t, noRedirectClient(t, nil), http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(h.Port)+"/ui/api/status",
			map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
		if resp.StatusCode != http.StatusOK {
			t.Logf("GET /ui/api/status: %s %s", resp.Status, body)
		}
		return resp.StatusCode
	}

	h2, stop2 := hubtest.Start(t, root, hub.Options{NoPanes: true})
	if got := status(h2); got != http.StatusOK {
		t.Fatalf("after a restart the session's cookie gets %d, want 200", got)
	}
	jar := newCookieJar(t)
	c := noRedirectClient(t, jar)
	ch := &cockpitHub{h: h2, base: "http://127.0.0.1:" + strconv.Itoa(h2.Port)}
	req, _ := http.NewRequest(http.MethodGet, ch.base+"/ui/", nil)
	jar.SetCookies(req.URL, []*http.Cookie{{Name: cookie.Name, Value: cookie.Value, Path: "/ui"}})
	ws := dialCockpitWS(t, c, ch.wsURL("/ui/ws"))
	readWSJSON(t, ws, "welcome", frameOfType("welcome"))
	writeWSJSON(t, ws, map[string]any{"type": "register", "role": "user", "listen": false})
	if reg := readWSJSON(t, ws, "registered", func(f map[string]any) bool { return f["type"] == "registered" || f["type"] == "error" }); reg["type"] != "registered" {
		t.Fatalf("register on /ui/ws after a restart: %v", reg)
	}
	ws.CloseNow()
	stop2()

	// A rotated operator token ends the sessions made under the old one.
	if _, err := lay.RotateToken(); err != nil {
		t.Fatal(err)
	}
	h3, _ := hubtest.Start(t, root, hub.Options{NoPanes: true})
	if got := status(h3); got != http.StatusUnauthorized {
		t.Fatalf("after hm token rotate the old cookie gets %d, want 401", got)
	}
}
