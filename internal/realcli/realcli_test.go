package realcli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/internal/realcli/model"
)

// TestRealCLIs runs Claude Code, Codex CLI and Gemini CLI, as pinned in
// scripts/agent-clis.txt, each in an hm pane against the scripted model,
// once typing only and once wired with hooks (hm init), in parallel
// (go test's -parallel at a time: GOMAXPROCS by default). Six at once
// took 81 s instead of 130 s, but twice in ten runs a Claude pane lost
// exactly-once under that load (session 18's note): not the default.
// Each pane gets the cases of suiteCases in sequence, sent by
// architect through the hub; every message must reach the model exactly
// once as new user content, intact and never merged with another, and its
// final stage in the ledger must be true of that.
//
// A CLI missing from the cache fails the test naming `make deps`.
func TestRealCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real CLIs take minutes")
	}
	for _, c := range agentCLIs {
		if _, _, err := Find(c.name); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	srv, err := model.Start(ctx, testLogger(t), script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, c := range agentCLIs {
		for _, hooks := range []bool{false, true} {
			mode := "typing"
			if hooks {
				mode = "hooks"
			}
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				r := startPane(t, srv, c, hooks)
				for _, sc := range suiteCases {
					t.Run(sc.name, func(t *testing.T) { sc.run(t, r) })
				}
				r.recount(t)
			})
		}
	}
}

// Script words: a message holding one makes the model act so.
const (
	slowWord  = "SLOW-TURN"       // the model works 10 s on this turn
	shellWord = "REPLY-VIA-SHELL" // the model runs hm-send architect "reply <token>"
)

var shellToken = regexp.MustCompile(shellWord + ` (\S+)`)

// script is the model: a short delay and "ok", a 10 s turn for slowWord,
// and for shellWord a shell tool call that sends architect a reply.
func script(r model.Request) model.Reply {
	if !r.Main || r.ToolResult {
		return model.Reply{}
	}
	n := r.New()
	switch {
	case strings.Contains(n, slowWord):
		return model.Reply{Delay: 10 * time.Second, Text: "done working"}
	case shellToken.MatchString(n):
		tok := shellToken.FindStringSubmatch(n)[1]
		return model.Reply{Shell: "hm-send architect 'reply " + tok + "'", Text: "sent"}
	}
	return model.Reply{Delay: 200 * time.Millisecond}
}

// testLogger logs warnings to t's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// paneRun is one CLI in one mode: its hub, its pane (builder) and its
// share of the model (requests under prefix).
type paneRun struct {
	t      testing.TB // the pane's test (<cli>/<mode>): its hubs and clients end with it
	cli    agentCLI
	hooks  bool
	root   string
	home   string // the CLI's scratch HOME: every process of the pane has it
	prefix string
	model  *model.Server
	hub    *hub
	arch   *client.Client
	view   *term // hm attach --view: the pane's screen for failure messages

	mu   sync.Mutex
	n    int
	sent []sentMsg
}

// sentMsg is a message architect sent to builder.
type sentMsg struct {
	id, content, caseName string
}

// startPane wires root for the mode, starts the hub with the CLI in
// builder's pane and waits for the pane to be ready.
func startPane(t testing.TB, srv *model.Server, c agentCLI, hooks bool) *paneRun {
	mode := map[bool]string{false: "typing", true: "hooks"}[hooks]
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, scratch := filepath.Join(base, "repo"), filepath.Join(base, "scratch")
	for _, d := range []string{root, filepath.Join(scratch, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// hm's binaries on the PATH of a login shell too, as a user's profile
	// has them: Codex runs its shell tool as one, and Debian's
	// /etc/profile sets PATH anew.
	writeFile(t, filepath.Join(scratch, "home", ".profile"), "export PATH='"+binDir(t)+"':\"$PATH\"\n")
	r := &paneRun{t: t, cli: c, hooks: hooks, root: root, home: filepath.Join(scratch, "home"), prefix: c.name + "-" + mode, model: srv}
	t.Cleanup(func() { r.endSurvivors() }) // after the hub stopped: cleanups run last first
	writeTeam(t, root, c.command(t, scratch, root, srv.URL(r.prefix), hooks), c.name, hooks)
	if hooks {
		runHM(t, root, "init", "--agents", c.name)
	}
	r.up(t)
	if err := r.waitReady(context.Background(), 120*time.Second); err != nil {
		t.Fatalf("%s did not become ready: %v\n%s", r.prefix, err, r.evidence())
	}
	return r
}

// up starts the hub on the pane's root (`hm up`), connects architect to it
// and attaches the view of builder's pane; they end with the pane's test
// (r.t), and t fails if one does not start.
func (r *paneRun) up(t testing.TB) {
	t = outliving{t, r.t}
	r.hub = startHub(t, r.root)
	r.arch = r.hub.dial(context.Background(), t, "architect")
	r.view = newTerm(t, env(t, r.root), hmBin(t, "hm"), "attach", "--view", "builder")
}

// outliving is a case's t whose cleanups are the pane's test's (owner):
// what a case starts for the cases after it (a new hub) fails the case
// but ends with the pane.
type outliving struct {
	testing.TB
	owner testing.TB
}

func (o outliving) Cleanup(f func()) { o.owner.Cleanup(f) }

// waitReady waits for builder's pane to be ready with nothing queued.
func (r *paneRun) waitReady(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		p, err := r.hub.pane(ctx)
		if err == nil && p.State == "ready" && p.Queued == 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("pane state %s, %d queued", p.State, p.Queued)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// evidence is what a failure shows: the pane's screen and the hub log.
func (r *paneRun) evidence() string {
	return fmt.Sprintf("--- %s screen:\n%s\n--- hub log (tail):\n%s", r.prefix, r.view.screen(), r.hub.hubLog())
}

// send sends content to builder as architect.
func (r *paneRun) send(t testing.TB, content string) sentMsg {
	t.Helper()
	r.mu.Lock()
	r.n++
	m := sentMsg{id: fmt.Sprintf("rc-%s-%d", r.prefix, r.n), content: content, caseName: t.Name()}
	r.sent = append(r.sent, m)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ack, _, err := r.arch.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: m.id, Content: content, RequestID: "req-" + m.id})
	if err != nil || !ack.OK {
		t.Fatalf("send %s: %v %+v", m.id, err, ack)
	}
	return m
}

// reqs are the model's requests from this pane.
func (r *paneRun) reqs() []model.Request { return r.model.Requests(r.prefix) }

// awaitModel waits until the model got each message (or d passed).
func (r *paneRun) awaitModel(d time.Duration, ms ...sentMsg) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		reqs, all := r.reqs(), true
		for _, m := range ms {
			all = all && len(sightings(reqs, m.id)) > 0
		}
		if all {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deliveryWait bounds the wait for one case's messages to reach the
// model: generous, for a loaded machine.
const deliveryWait = 60 * time.Second

// check waits for ms to reach the model and to end in the ledger, and
// fails t for each that did not reach the model exactly once, intact and
// alone, or whose final stage is false.
func (r *paneRun) check(t *testing.T, ms ...sentMsg) {
	t.Helper()
	r.awaitModel(deliveryWait, ms...)
	bad := false
	for _, m := range ms {
		detail, err := r.final(m.id)
		if err != nil {
			t.Errorf("%s: %v", m.id, err)
			bad = true
			continue
		}
		ss := sightings(r.reqs(), m.id)
		if err := judge(ss, m.id, detail.Body, readFile); err != nil {
			t.Errorf("%s (stage %s): %v", m.id, detail.AckStatus, err)
			bad = true
		}
		if err := stageTrue(detail.AckStatus, len(ss) > 0); err != nil {
			t.Errorf("%s: %v; events: %s", m.id, err, events(detail))
			bad = true
		}
	}
	if bad {
		t.Log(r.evidence())
		t.Log(r.sessionEvents())
		r.dump(t)
	}
}

// sessionEvents is the ledger's account of the session messages hm typed
// into the pane at each hub start: a case's message merged with one of
// them is judged by what hm recorded for it.
func (r *paneRun) sessionEvents() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res proto.GetResult
	ids := []string{"session-1-builder", "session-2-builder", "session-3-builder"}
	if err := query(ctx, r.arch, proto.QueryGet, proto.GetQuery{MessageIDs: ids}, &res); err != nil {
		return "session messages: " + err.Error()
	}
	var b strings.Builder
	for _, m := range res.Messages {
		fmt.Fprintf(&b, "session message %s: status %s, stage %s; events: %s\n", m.MessageID, m.Status, m.AckStatus, events(m))
	}
	return b.String()
}

// dump writes the pane's model requests, as received, into
// $HM_REALCLI_DUMP/<test>/ when that is set, for a failure's post-mortem.
func (r *paneRun) dump(t *testing.T) {
	dir := os.Getenv("HM_REALCLI_DUMP")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	for _, q := range r.reqs() {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("%03d-main-%v.json", q.Seq, q.Main)), string(q.Body))
	}
	// The pane logs (every byte the CLI drew, to replay the screens the
	// delivery judged), the entered logs and the hub's log; no secrets.
	lay := layout.Layout{Root: r.root}
	logs, _ := filepath.Glob(filepath.Join(lay.PaneLogs(), "*.log"))
	entered, _ := filepath.Glob(filepath.Join(lay.PaneLogs(), "*.entered"))
	for _, f := range append(append(logs, entered...), filepath.Join(lay.Runtime(), "hub.log")) {
		if data, err := os.ReadFile(f); err == nil {
			writeFile(t, filepath.Join(dir, "hub", filepath.Base(f)), string(data))
		}
	}
	t.Logf("the model's requests from %s, its pane and hub logs are in %s", r.prefix, dir)
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// final waits for the message's row to reach a final state (routed,
// acked, failed, or stuck) and returns it.
func (r *paneRun) final(id string) (proto.MessageDetail, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last proto.MessageDetail
	for {
		var res proto.GetResult
		if err := query(ctx, r.arch, proto.QueryGet, proto.GetQuery{MessageIDs: []string{id}}, &res); err != nil {
			return last, fmt.Errorf("get: %w", err)
		}
		if len(res.Messages) == 1 {
			last = res.Messages[0]
			if last.Status.Rank() >= status.Routed.Rank() || last.Status == status.Failed || last.AckStatus == status.Stuck {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("no final stage in the ledger: status %s, stage %s; events: %s", last.Status, last.AckStatus, events(last))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func events(d proto.MessageDetail) string {
	var b []string
	for _, e := range d.Events {
		b = append(b, string(e.Event)+" "+string(e.Detail))
	}
	return strings.Join(b, " → ")
}

// recount judges every message sent to the pane once more at the end: a
// copy that reached the model late (a prompt restored and submitted again)
// fails the case that sent it.
func (r *paneRun) recount(t *testing.T) {
	reqs := r.reqs()
	seen := map[int]bool{} // the requests that held a copy
	for _, m := range r.sent {
		if ss := sightings(reqs, m.id); len(ss) > 1 {
			t.Errorf("%s (%s) reached the model %d times by the end of the run (%s)", m.id, m.caseName, len(ss), seqs(ss))
			for _, s := range ss {
				seen[s.seq] = true
			}
		}
	}
	if len(seen) > 0 {
		t.Logf("the main requests that held those copies:\n%s", describe(reqs, seen))
		r.dump(t)
	}
}

// endSurvivors kills (SIGKILL) every process of the pane still running
// and returns their command lines by pid.
func (r *paneRun) endSurvivors() map[int]string {
	ps := paneProcesses(r.home)
	for pid := range ps {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return ps
}

// killCLI ends the pane's program (its process group) with SIGKILL and
// waits for the pane to run a new one.
func (r *paneRun) killCLI(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	p, err := r.hub.pane(ctx)
	if err != nil || p.PID <= 0 {
		t.Fatalf("builder's pane: %+v %v", p, err)
	}
	if err := syscall.Kill(-p.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the CLI's process group %d: %v", p.PID, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		q, err := r.hub.pane(ctx)
		if err == nil && q.PID > 0 && q.PID != p.PID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pane did not restart its program: %+v %v\n%s", q, err, r.evidence())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
