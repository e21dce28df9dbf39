package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/cockpit"
	"hm/internal/ground/testutil"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestUICommand: `hm ui` prints a login URL that logs a browser in once;
// --json prints the code, URL and expiry.
func TestUICommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	port := strconv.Itoa(h.Port)
	hm := cliOnHub(t, root, port)
	run := func(args ...string) (int, string, string) { return hm("ui", args...) }

	code, out, errOut := run()
	url := strings.TrimSpace(out)
	if code != ExitOK || !strings.HasPrefix(url, "http://127.0.0.1:"+port+"/ui/login?code=") || strings.Count(out, "\n") != 1 {
		t.Fatalf("hm ui: exit %d stdout %q stderr %q", code, out, errOut)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	browser := &http.Client{Transport: tr, Jar: jar, Timeout: 30 * time.Second}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The login redirects to the page, which the cookie opens.
	if st, body := get(url); st != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("open %s: %d %.200s", url, st, body)
	}
	if st, body := get("http://127.0.0.1:" + port + "/ui/api/status"); st != http.StatusOK || !strings.Contains(body, `"sessionId"`) {
		t.Fatalf("status with the cookie: %d %.200s", st, body)
	}
	// The URL works once.
	other, _ := cookiejar.New(nil)
	browser.Jar = other
	if st, body := get(url); st != http.StatusUnauthorized || !strings.Contains(body, "hm ui") {
		t.Fatalf("second use of %s: %d %.200s", url, st, body)
	}

	code, out, errOut = run("--json")
	var cr cockpit.CodeResponse
	if err := json.Unmarshal([]byte(out), &cr); code != ExitOK || err != nil || len(cr.Code) != 32 || !strings.HasSuffix(cr.URL, "?code="+cr.Code) || cr.ExpiresAt == "" {
		t.Fatalf("hm ui --json: exit %d %v stdout %q stderr %q", code, err, out, errOut)
	}
}

// TestUICommandErrors: hub down, a wrong token and bad arguments fail
// with a clear message.
func TestUICommandErrors(t *testing.T) {
	t.Parallel()
	free := testutil.ClosedPort(t)
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{"hub down", []string{"--port", free}, nil, ExitFailed, "no hub is running on 127.0.0.1:" + free},
		{"wrong token", []string{"--port", strconv.Itoa(h.Port)}, map[string]string{"HM_TOKEN": "not-the-token"}, ExitFailed, "401 Unauthorized: operator token required"},
		{"extra argument", []string{"now"}, nil, ExitUsage, "usage: " + uiSynopsis},
		{"unknown flag", []string{"--bogus"}, nil, ExitUsage, "unknown flag --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return tc.env[k] }}
			code := MainContext(t.Context(), append([]string{"ui", "--root", root}, tc.args...), env)
			if code != tc.code || !strings.Contains(errb.String(), tc.stderr) || out.Len() != 0 {
				t.Fatalf("exit %d (want %d) stdout %q stderr %q (want %q)", code, tc.code, out.String(), errb.String(), tc.stderr)
			}
		})
	}
}
