package cockpit_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"hm/agent"
	"hm/internal/cockpit"
	"hm/internal/ground/status"
	"hm/roles"
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

// TestPageRestatesNoVocabulary: the page takes the delivery stages (their
// order, words and kinds), the statuses, the priority tags and the
// header grammar from the hub (GET /ui/api/words and the rows' tags)
// instead of holding its own copy (issue #35): no served file names a
// stage or status as a string, spells a tag or matches a header; and the
// endpoint serves the one table of each rule.
func TestPageRestatesNoVocabulary(t *testing.T) {
	t.Parallel()
	base := serveCockpit(t, cockpit.New(fakeCockpitDeps(nil)))
	c, _ := loginSession(t, base, testOperatorToken)
	var page strings.Builder
	for _, f := range []string{"app.js", "index.html", "hub.js", "term.js", "markdown.js"} {
		resp, body := doReq(t, c, http.MethodGet, base+"/ui/"+f, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /ui/%s: %s", f, resp.Status)
		}
		page.WriteString(body)
	}
	src := page.String()
	var names []string
	for _, s := range status.Stages {
		if s != status.StageNone {
			names = append(names, string(s))
		}
	}
	names = append(names, string(status.FallbackTriggered))
	for _, s := range status.Statuses {
		names = append(names, string(s))
	}
	// How a pane's program came to be: the hub's originWords (#37).
	for _, o := range []agent.Origin{agent.OriginStarted, agent.OriginAdopted, agent.OriginRestarted, agent.OriginResumed} {
		names = append(names, string(o))
	}
	for _, n := range append(names, roles.RoleSystem) {
		for _, q := range []string{"'" + n + "'", `"` + n + `"`, "`" + n + "`"} {
			if strings.Contains(src, q) {
				t.Errorf("the page holds its own %s", q)
			}
		}
	}
	for _, tag := range roles.PriorityTags() {
		// The tag in any case, or its word in capitals (a pattern's
		// alternative, such as URGENT|FYI).
		if strings.Contains(strings.ToUpper(src), tag) || strings.Contains(src, strings.Trim(tag, "[]")) {
			t.Errorf("the page spells the tag %s", tag)
		}
	}
	for _, grammar := range []string{`#\d`, "AGENT MSG"} {
		if strings.Contains(src, grammar) {
			t.Errorf("the page restates the header grammar (%s)", grammar)
		}
	}

	resp, body := doReq(t, c, http.MethodGet, base+"/ui/api/words", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui/api/words: %s %s", resp.Status, body)
	}
	var got cockpit.Words
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := cockpit.Words{Stages: status.PlainTable(), Failed: status.Failed, Tags: roles.PriorityTags(), System: roles.RoleSystem}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("words:\n got %+v\nwant %+v", got, want)
	}
	for i, s := range got.Stages[:len(got.Stages)-1] {
		if s.Stage.Rank() != i || s.Delivered != s.Stage.Delivered() || s.NeedsPerson != s.Stage.NeedsPerson() {
			t.Errorf("stages[%d] = %+v: not in rank order or its kinds differ", i, s)
		}
	}
}
