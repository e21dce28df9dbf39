package cockpit_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/hub"
)

// TestBrowserPaneOrigin: the cockpit says how each pane's program came to
// be (#37), in the hub's words: /ui/api/status carries origin and
// originWords, and each pane's header shows the words. The builder's
// program ends after its first prompt and is restarted; the architect's
// runs as it was started.
func TestBrowserPaneOrigin(t *testing.T) {
	e := startEnv(t, []paneSpec{{role: "architect"}, {role: "builder", env: []string{"FAKEAGENT_EXIT_AFTER=1"}}}, 1280, 800, "")
	c, _ := loginSession(t, e.base, e.token)
	want := map[string]string{"architect": "started", "builder": "restarted (1 restart)"}
	poll.For(t, 30*time.Second, func() error {
		resp, body := doReq(t, c, http.MethodGet, e.base+"/ui/api/status", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /ui/api/status: %s %s", resp.Status, body)
		}
		var st hub.Status
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range st.Panes {
			got[p.Role] = p.OriginWords
			if p.OriginWords != "" && string(p.Origin) == "" {
				t.Errorf("pane %s: originWords %q without origin", p.Role, p.OriginWords)
			}
		}
		return poll.Want(got["architect"] == want["architect"] && got["builder"] == want["builder"], "/ui/api/status origin words %v, want %v", got, want)
	})
	for role, words := range want {
		waitJS(t, e.browser, 20*time.Second, role+" pane header shows "+words,
			`(document.querySelector('.pane[data-role="`+role+`"] .pane-head .origin') || {}).textContent || ''`,
			func(s string) bool { return s == words })
	}
}
