package cockpit_test

// The cockpit's benchmarks (issue #17), run by scripts/bench: time from the
// hub's start to the first paint of every pane, the timeline's latency from
// ledger commit to DOM (beside a floor: a bare WebSocket push to a page),
// and the browser's memory with six panes streaming output.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/systeminfo"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"hm/broker/proto"
	"hm/internal/client"
)

var streamFor = flag.Duration("cockpit.stream", 5*time.Minute, "BenchmarkBrowserMemory: how long six panes stream output")

func nowMs() float64 { return float64(time.Now().UnixMicro()) / 1000 }

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// allPainted is the latest first-paint time of the page's panes (epoch
// ms), or 0 while one of want panes has not painted.
func allPainted(want int) string {
	return fmt.Sprintf(`(() => {
  const ps = [...document.querySelectorAll('.pane')];
  if (ps.length < %d || ps.some((p) => !p.dataset.painted)) return 0;
  return Math.max(...ps.map((p) => +p.dataset.painted));
})()`, want)
}

// BenchmarkFirstPaint: from the hub's start (hm up) to every pane's xterm
// showing its program's first output, three fake agents, the browser
// already running (it opens the login URL as soon as the hub serves).
func BenchmarkFirstPaint(b *testing.B) {
	browser := startBrowser(b, 1280, 800)
	fakeAgentBin(b)
	panes := []paneSpec{{role: "architect"}, {role: "builder"}, {role: "oracle"}}
	var paint, ready []float64
	for i := 0; i < b.N; i++ {
		t0 := nowMs()
		e := startHub(b, panes, "", "")
		ready = append(ready, nowMs()-t0)
		e.login(browser)
		last := waitJS(b, browser, 30*time.Second, "every pane painted", allPainted(len(panes)), func(v float64) bool { return v > 0 })
		paint = append(paint, last-t0)
		e.stop()
		if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(pct(paint, 0.5), "p50-ms")
	b.ReportMetric(pct(ready, 0.5), "hub-ready-ms")
}

// observeJS records, in the page, when each element with a data-id is
// first added under sel (epoch ms, the page's clock: performance.timeOrigin
// + now, the same wall clock as Go's time.Now on one machine).
func observeJS(sel string) string {
	return fmt.Sprintf(`(() => {
  window.__seen = {};
  const root = document.querySelector(%q);
  new MutationObserver((recs) => {
    const t = performance.timeOrigin + performance.now();
    for (const r of recs) for (const n of r.addedNodes) {
      const id = n.dataset && n.dataset.id;
      if (id && !(id in window.__seen)) window.__seen[id] = t;
    }
  }).observe(root, { childList: true });
  return true;
})()`, sel)
}

// seenAll waits until the page saw every id and returns their times.
func seenAll(b *testing.B, ctx context.Context, ids []string) map[string]float64 {
	b.Helper()
	var seen map[string]float64
	waitJS(b, ctx, 60*time.Second, fmt.Sprintf("%d ids in the DOM", len(ids)), `JSON.stringify(window.__seen)`, func(s string) bool {
		seen = map[string]float64{}
		_ = json.Unmarshal([]byte(s), &seen)
		return len(seen) >= len(ids)
	})
	return seen
}

const latencyMessages = 200

// BenchmarkTimelineLatency: N messages sent one at a time (every 20 ms) to
// a WebSocket listener; for each, the time from its ledger commit
// (brokered_at_ms) and from the send to its row appearing in the
// timeline's DOM.
func BenchmarkTimelineLatency(b *testing.B) {
	browser := startBrowser(b, 1280, 800)
	e := startHub(b, []paneSpec{{role: "architect"}, {role: "builder"}}, `{"role":"oracle","transport":"ws"}`, "")
	e.login(browser)
	waitJS(b, browser, 20*time.Second, "cockpit connected", `document.body.dataset.hub || ''`, func(s string) bool { return s == "connected" })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listener, err := client.Dial(ctx, e.h.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer listener.CloseNow()
	if _, err := listener.Register(ctx, "oracle", e.token, true); err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			if _, _, err := listener.Next(ctx); err != nil {
				return
			}
		}
	}()
	defer func() { cancel(); <-drained }()
	sender, err := client.Dial(ctx, e.h.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer sender.CloseNow()
	if _, err := sender.Register(ctx, "architect", e.token, false); err != nil {
		b.Fatal(err)
	}
	var commit, send []float64
	for i := 0; i < b.N; i++ {
		if _, err := eval[bool](browser, observeJS("#timeline")); err != nil {
			b.Fatal(err)
		}
		ids := make([]string, latencyMessages)
		sentAt := map[string]float64{}
		for j := range ids {
			ids[j] = fmt.Sprintf("lat-%d-%d", i, j)
			sentAt[ids[j]] = nowMs()
			ack, _, err := sender.Send(ctx, proto.Frame{Type: "send", Target: "oracle", Content: "latency " + strconv.Itoa(j), MessageID: ids[j]})
			if err != nil || !ack.OK {
				b.Fatalf("send: %v %+v", err, ack)
			}
			time.Sleep(20 * time.Millisecond) // pacing: one message at a time
		}
		seen := seenAll(b, browser, ids)
		for _, id := range ids {
			m, err := e.h.Ledger.Get(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			commit = append(commit, seen[id]-float64(m.BrokeredAtMs))
			send = append(send, seen[id]-sentAt[id])
		}
	}
	b.ReportMetric(pct(commit, 0.5), "p50-ms")
	b.ReportMetric(pct(commit, 0.99), "p99-ms")
	b.ReportMetric(pct(send, 0.5), "send-p50-ms")
	b.ReportMetric(pct(send, 0.99), "send-p99-ms")
}

// BenchmarkPageWebSocketFloor: the floor for the timeline's latency: a Go
// WebSocket server pushes a frame to a bare page that appends an element
// for it; from the push to the element in the DOM, same clocks as above.
func BenchmarkPageWebSocketFloor(b *testing.B) {
	browser := startBrowser(b, 1280, 800)
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			conns <- c
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><ol id="list"></ol><script>
const ws = new WebSocket('ws://' + location.host + '/ws');
ws.onmessage = (e) => { const f = JSON.parse(e.data); const li = document.createElement('li'); li.dataset.id = f.id; li.textContent = f.body; document.getElementById('list').prepend(li); };
</script>`)
	}))
	defer srv.Close()
	if err := chromedp.Do(browser, chromedp.Navigate(srv.URL)); err != nil {
		b.Fatal(err)
	}
	c := <-conns
	defer c.CloseNow()
	ctx := context.Background()
	var lat []float64
	for i := 0; i < b.N; i++ {
		if _, err := eval[bool](browser, observeJS("#list")); err != nil {
			b.Fatal(err)
		}
		ids := make([]string, latencyMessages)
		sentAt := map[string]float64{}
		for j := range ids {
			ids[j] = fmt.Sprintf("f-%d-%d", i, j)
			data, _ := json.Marshal(map[string]string{"id": ids[j], "body": "latency " + strconv.Itoa(j)})
			sentAt[ids[j]] = nowMs()
			if err := c.Write(ctx, websocket.MessageText, data); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen := seenAll(b, browser, ids)
		for _, id := range ids {
			lat = append(lat, seen[id]-sentAt[id])
		}
	}
	b.ReportMetric(pct(lat, 0.5), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
}

// streamCmd prints about 400 lines (32 KiB) a second.
const streamCmd = `i=0; while :; do i=$((i+1)); echo "pane output line $i: the quick brown fox jumps over the lazy dog 0123456789"; [ $((i % 20)) -eq 0 ] && sleep 0.05; done`

// BenchmarkBrowserMemory: the page's JS heap and the renderer's resident
// set with six panes streaming output for -cockpit.stream (5 minutes).
func BenchmarkBrowserMemory(b *testing.B) {
	const n = 6
	var panes []paneSpec
	for i := range n {
		panes = append(panes, paneSpec{role: fmt.Sprintf("p%d", i+1), command: "sh -c '" + streamCmd + "'"})
	}
	for i := 0; i < b.N; i++ {
		browser := startBrowser(b, 1280, 800)
		blank := rendererRSS(b, browser) // the floor: the same browser on about:blank
		e := startHub(b, panes, "", "")
		e.login(browser)
		waitJS(b, browser, 30*time.Second, "every pane painted", allPainted(n), func(v float64) bool { return v > 0 })
		if _, err := chromedp.Call(browser, performance.Enable, performance.EnableParams{}); err != nil {
			b.Fatal(err)
		}
		var heap, heapPeak, rssPeak float64
		sample := func() {
			m, err := chromedp.Call(browser, performance.GetMetrics, cdp.Empty{})
			if err != nil {
				b.Fatal(err)
			}
			for _, x := range m.Metrics {
				if x.Name == "JSHeapUsedSize" {
					heap = x.Value / (1 << 20)
					heapPeak = max(heapPeak, heap)
				}
			}
			rssPeak = max(rssPeak, rendererRSS(b, browser))
		}
		end := time.Now().Add(*streamFor)
		for time.Now().Before(end) {
			sample()
			time.Sleep(min(10*time.Second, time.Until(end)+time.Millisecond))
		}
		sample()
		// The panes kept up: each shows recent output.
		text, _ := eval[string](browser, paneText("p1"))
		if !strings.Contains(text, "pane output line") {
			b.Fatalf("p1 stopped showing output: %q", clip(text, 300))
		}
		b.ReportMetric(heap, "heap-MB")
		b.ReportMetric(heapPeak, "heap-peak-MB")
		b.ReportMetric(rssPeak, "renderer-rss-MB")
		b.ReportMetric(blank, "blank-rss-MB")
		e.stop()
	}
}

// rendererRSS is the largest resident set of the browser's renderer
// processes (the page's), in MiB, read from /proc.
func rendererRSS(b *testing.B, ctx context.Context) float64 {
	info, err := chromedp.CallBrowser(ctx, systeminfo.GetProcessInfo, cdp.Empty{})
	if err != nil {
		b.Fatalf("SystemInfo.getProcessInfo: %v", err)
	}
	var peak float64
	for _, p := range info.ProcessInfo {
		if p.Type != "renderer" {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", int(p.ID)))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				peak = max(peak, kb/1024)
			}
		}
	}
	return peak
}
