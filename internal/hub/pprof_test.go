package hub_test

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

	"hm/internal/ground/layout"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// pprofGet GETs path on h's port with the headers given and returns the
// status and body.
func pprofGet(t *testing.T, h *hub.Hub, path string, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(h.Port)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func operatorHeader(t *testing.T, root string) map[string]string {
	t.Helper()
	tok, err := layout.Layout{Root: root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"Authorization": "Bearer " + tok}
}

// TestPprofOffIsNotFound: without --pprof (or settings.json "pprof"),
// /debug/pprof/ does not exist, not even for the operator.
func TestPprofOffIsNotFound(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true})
	op := operatorHeader(t, root)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, body := pprofGet(t, h, path, op); code != http.StatusNotFound {
			t.Errorf("GET %s without --pprof = %d %q; want 404", path, code, body)
		}
	}
}

// TestPprofOperatorOnly: with --pprof, the profiles are the operator's
// alone (401 without the operator token, 403 from a browser), and a CPU
// profile comes back.
func TestPprofOperatorOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, Pprof: true})
	op := operatorHeader(t, root)
	browser := map[string]string{"Authorization": op["Authorization"], "Origin": "http://evil.example"}
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"a pane's token", map[string]string{"Authorization": "Bearer " + h.Tokens.Issue("builder")}, http.StatusUnauthorized},
		{"token without Bearer", map[string]string{"Authorization": op["Authorization"][len("Bearer "):]}, http.StatusUnauthorized},
		{"browser", browser, http.StatusForbidden},
		{"operator", op, http.StatusOK},
	} {
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			if code, body := pprofGet(t, h, path, c.header); code != c.want {
				t.Errorf("%s: GET %s = %d %q; want %d", c.name, path, code, body, c.want)
			}
		}
	}
	if code, body := pprofGet(t, h, "/debug/pprof/profile?seconds=1", op); code != http.StatusOK || len(body) == 0 {
		t.Errorf("GET profile?seconds=1 = %d, %d bytes; want 200 and a profile", code, len(body))
	}
	if code, body := pprofGet(t, h, "/debug/pprof/heap", op); code != http.StatusOK || len(body) == 0 {
		t.Errorf("GET heap = %d, %d bytes; want 200 and a profile", code, len(body))
	}
}

// TestPprofFromSettings: settings.json "pprof": true turns it on as the
// flag does.
func TestPprofFromSettings(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.Settings(), []byte(`{"pprof": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true})
	if code, body := pprofGet(t, h, "/debug/pprof/cmdline", operatorHeader(t, root)); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/cmdline with settings.json pprof = %d %q; want 200", code, body)
	}
	if code, _ := pprofGet(t, h, "/debug/pprof/cmdline", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /debug/pprof/cmdline without a token = %d; want 401", code)
	}
}
