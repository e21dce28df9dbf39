package cockpit_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSlotPaneState: issue #17 has every pane's header, main and
// background, show its state as ready, busy, waiting_for_human or
// exited. A background slot's pane showed the slot's lifecycle status
// ("starting", "running") instead.
func TestBrowserSlotPaneState(t *testing.T) {
	e := startEnv(t, []paneSpec{{role: "builder"}}, 1280, 800,
		`"background":{"owner":"builder","max":1,"command":"FAKEAGENT_ENTER_MS=60 $FAKE"}`)
	ctx := e.browser
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("spawntask"), "lint the tree\r")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, browserWait, "the slot's pane shows its program",
		`(() => { const p = document.querySelector('.pane[data-role="builder-bg-1"]'); if (p) p.scrollIntoView(); return p ? `+paneText("builder-bg-1")+` : ''; })()`,
		func(s string) bool { return strings.Contains(s, "fakeagent ready") })
	states := []string{"ready", "busy", "waiting_for_human", "exited"}
	waitJS(t, ctx, browserWait, "the slot pane's header state is one of "+strings.Join(states, "/"),
		`(document.querySelector('.pane[data-role="builder-bg-1"] .pane-head .state') || {}).textContent || ''`,
		func(s string) bool { return slices.Contains(states, s) })
}
