package cockpit_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"hm/internal/cockpit"
	"hm/internal/ground/testutil"
)

// clock is a settable test clock for cockpit.Deps.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testOperatorToken is the operator secret of the fake-deps cockpit.
const testOperatorToken = "operator-secret"

// fakeCockpitDeps are Deps without a hub: the WebSocket and attach handlers
// answer 299 so a test can tell that the cockpit let a request through.
func fakeCockpitDeps(now func() time.Time) cockpit.Deps {
	through := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
	return cockpit.Deps{
		Port:       4242,
		IsOperator: func(tok string) bool { return tok == testOperatorToken },
		ServeWS:    through,
		Attach:     func(func(*http.Request) bool) http.Handler { return through },
		Snapshot: func(context.Context) any {
			return map[string]any{"hub": map[string]any{"port": 4242}, "panes": []any{}}
		},
		Handoff: func(context.Context) (cockpit.Handoff, error) {
			return cockpit.Handoff{Path: "/x/handoffs/session.md", Markdown: "# Handoff\n"}, nil
		},
		Verify: func(context.Context) (cockpit.Verification, error) {
			return cockpit.Verification{OK: true, Rows: 3, Messages: 1}, nil
		},
		MessageChain: func(_ context.Context, id string) (cockpit.MessageChain, bool, error) {
			if id != "m-1" {
				return cockpit.MessageChain{}, false, nil
			}
			return cockpit.MessageChain{ChainOK: true, Events: []cockpit.ChainEvent{{Event: "brokered", At: 1, Detail: json.RawMessage(`{}`), Hash: "ab"}}}, true, nil
		},
		Now: now,
	}
}

// server serves a cockpit at /ui/ on a real loopback socket (port 0) and
// returns its base URL ("http://127.0.0.1:<port>").
func serveCockpit(t *testing.T, h http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	mux.Handle("/ui", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// noRedirectClient is a client that returns redirects instead of following
// them, with its own transport closed at the test's end.
func noRedirectClient(t *testing.T, jar http.CookieJar) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func newCookieJar(t *testing.T) *cookiejar.Jar {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return jar
}

// do sends a request with the given headers and returns the response and
// its body.
func doReq(t *testing.T, c *http.Client, method, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// code asks base for a login code with the operator token.
func loginCode(t *testing.T, c *http.Client, base, token string) cockpit.CodeResponse {
	t.Helper()
	resp, body := doReq(t, c, http.MethodPost, base+"/ui/code", map[string]string{"Authorization": "Bearer " + token})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /ui/code: %s %s", resp.Status, body)
	}
	var cr cockpit.CodeResponse
	if err := json.Unmarshal([]byte(body), &cr); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return cr
}

// login gets a code and redeems it at base; it returns a client whose jar
// holds the session cookie, and the cookie.
func loginSession(t *testing.T, base, token string) (*http.Client, *http.Cookie) {
	t.Helper()
	c := noRedirectClient(t, newCookieJar(t))
	cr := loginCode(t, c, base, token)
	resp, body := doReq(t, c, http.MethodGet, base+"/ui/login?code="+cr.Code, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s %s", resp.Status, body)
	}
	u, _ := url.Parse(base + "/ui/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == cockpit.CookieName {
			return c, ck
		}
	}
	t.Fatal("login set no session cookie")
	return nil, nil
}

// fakeAgentBin returns the path of the fake agent (agent/internal/fakeagent),
// built once for the tests that host panes.
func fakeAgentBin(t testing.TB) string { return testutil.FakeAgent(t) }
