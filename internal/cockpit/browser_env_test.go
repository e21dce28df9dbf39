package cockpit_test

// The browser tests' and benchmarks' environment: a real hub
// (hubtest.Start) whose panes run the fake agent, and one headless
// Chromium driven by chromedp, logged in with a one-time code.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// -update regenerates testdata/screens/*.png. The package's internal tests
// (initialised first, in the same test binary) may declare the flag
// already; then that one is read.
var _ = func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "regenerate testdata/screens/*.png")
	}
	return true
}()

// updating reports whether -update was given.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// chromePath finds the browser: $CHROME, else chromium on PATH.
func chromePath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("CHROME"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			tb.Fatalf("$CHROME=%q: %v (install Debian's chromium or set $CHROME; `make deps` does it)", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Fatal("no Chromium for the cockpit's browser tests: install Debian's chromium or set $CHROME; `make deps` does it")
	return ""
}

// env is one hub and one browser logged in to its cockpit.
type env struct {
	tb      testing.TB
	root    string
	h       *hub.Hub
	stop    func()
	base    string // http://127.0.0.1:<port>
	token   string
	browser context.Context // the logged-in tab
}

// paneSpec is one pane of the team: a role and extra fake agent settings.
type paneSpec struct {
	role    string
	env     []string
	command string // instead of the fake agent
}

func teamSettings(root, fake string, panes []paneSpec) string {
	var b strings.Builder
	b.WriteString(`{"panes":[`)
	for i, p := range panes {
		if i > 0 {
			b.WriteString(",")
		}
		cmd := p.command
		if cmd == "" {
			cmd = strings.Join(append([]string{"FAKEAGENT_LOG=" + filepath.Join(root, p.role+".jsonl"), "FAKEAGENT_ENTER_MS=60"}, append(p.env, fake)...), " ")
		}
		fmt.Fprintf(&b, `{"role":%q,"command":%q,"profile":"default"}`, p.role, cmd)
	}
	b.WriteString(`]}`)
	return b.String()
}

// startEnv starts a hub with panes and a browser of width x height, logs
// in and opens /ui/.
func startEnv(tb testing.TB, panes []paneSpec, width, height int, top string) *env {
	tb.Helper()
	browser := startBrowser(tb, width, height)
	e := startHub(tb, panes, "", top)
	e.browser = browser
	e.login(browser)
	return e
}

// startBrowser launches headless Chromium (ended at tb's cleanup) and
// returns the context of its first tab.
func startBrowser(tb testing.TB, width, height int) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromePath(tb)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.Flag("hide-scrollbars", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	watchConsole(tb, browser) // its cleanup waits for the cancel below (cleanups run last first)
	tb.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		tb.Fatalf("start Chromium: %v", err)
	}
	return browser
}

// startHub starts a hub whose panes run the fake agent. extra is JSON
// appended to the panes list (other members), top to the settings object
// (e.g. `"background":{...}`); "$FAKE" in top is the fake agent.
func startHub(tb testing.TB, panes []paneSpec, extra, top string) *env {
	tb.Helper()
	fake := fakeAgentBin(tb) // helpers_test.go: built once, removed by TestMain
	root := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".squidrun"), 0o700); err != nil {
		tb.Fatal(err)
	}
	settings := teamSettings(root, fake, panes)
	if extra != "" {
		settings = strings.TrimSuffix(settings, "]}") + "," + extra + "]}"
	}
	if top != "" {
		settings = strings.TrimSuffix(settings, "}") + "," + strings.ReplaceAll(top, "$FAKE", fake) + "}"
	}
	if err := os.WriteFile(filepath.Join(root, ".squidrun", "settings.json"), []byte(settings), 0o600); err != nil {
		tb.Fatal(err)
	}
	h, stop := hubtest.Start(tb, root, hub.Options{PaneMinBackoff: 50 * time.Millisecond, PaneMaxBackoff: 200 * time.Millisecond, HandoffEvery: 500 * time.Millisecond})
	tok, err := h.Layout.ReadToken()
	if err != nil {
		tb.Fatal(err)
	}
	return &env{tb: tb, root: root, h: h, stop: stop, base: fmt.Sprintf("http://127.0.0.1:%d", h.Port), token: tok}
}

// code asks the hub for a one-time login URL, as `hm ui` does.
func (e *env) code() string {
	e.tb.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+"/ui/code", nil)
	if err != nil {
		e.tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Code, URL string
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 || c.URL == "" {
		e.tb.Fatalf("POST /ui/code: %d %v %+v", resp.StatusCode, err, c)
	}
	return c.URL
}

// login opens a fresh login URL in ctx and waits for the page.
func (e *env) login(ctx context.Context) {
	e.tb.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(e.code()))
	if err != nil {
		e.tb.Fatalf("open login URL: %v", err)
	}
	if resp.Status != 200 || !strings.HasSuffix(resp.URL, "/ui/") {
		e.tb.Fatalf("login landed on %s with %d", resp.URL, resp.Status)
	}
}

// eval evaluates expr in ctx's page.
func eval[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// waitJS polls expr in ctx's page until ok accepts its value, and fails
// with the last value (or error) at the deadline.
func waitJS[T any](tb testing.TB, ctx context.Context, timeout time.Duration, what, expr string, ok func(T) bool) T {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var last T
	var lastErr error
	for {
		v, err := eval[T](ctx, expr)
		if err == nil && ok(v) {
			return v
		}
		last, lastErr = v, err
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s; last value %v (err %v)%s", what, timeout, clip(fmt.Sprint(last), 600), lastErr, pageErrors.String())
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// browserWait bounds each wait for the page: a deadline a loaded machine
// (make test-loaded: a CPU hog, the race step and the real-CLI suite
// beside the browser) does not reach; a quiet one takes well under a
// second.
const browserWait = time.Minute

// click clicks what sel finds, as a person would. A page that draws the
// node again between chromedp's query and its click ("Could not find node
// with given id", seen under make test-loaded on the slot list's button)
// is clicked again, until browserWait.
func click[S chromedp.Selectable](tb testing.TB, ctx context.Context, sel S) {
	tb.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		err := chromedp.Do(ctx, chromedp.Click(sel))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || time.Now().After(deadline) {
			tb.Fatalf("click %v: %v", sel, err)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// paneText is the text of a pane's xterm rows (the DOM renderer's).
func paneText(role string) string {
	return fmt.Sprintf(`(document.querySelector('.pane[data-role=%q] .xterm-rows') || {}).textContent || ''`, role)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pageErrors collects the pages' uncaught exceptions and console errors,
// shown when a wait fails.
var pageErrors errLog

type errLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 50 {
		l.lines = append(l.lines, s)
	}
}

func (l *errLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return "\npage errors:\n  " + strings.Join(l.lines, "\n  ")
}

// watchConsole records ctx's page errors until the test ends.
func watchConsole(tb testing.TB, ctx context.Context) {
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleError {
				pageErrors.add(fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line, m.Text))
			}
		}
	}()
	tb.Cleanup(func() { <-done })
}
