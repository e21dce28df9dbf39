package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/promptlog"
	"hm/internal/ground/status"
	"hm/internal/ground/testutil"
	"hm/internal/hook"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
	"hm/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// neverReady hosts builder in a pane whose screen never shows its profile's
// ready marker: nothing is ever typed into it, so what is sent to builder
// stays queued until a hook claims it. architect and oracle are not hosted.
const neverReady = `{"profiles":{"never":{"ready":["NEVER-SHOWN-MARKER"]}},"panes":[
 {"role":"architect","transport":"ws"},
 {"role":"builder","command":"sleep 3600","profile":"never"},
 {"role":"oracle","transport":"ws"}]}`

// hookHub is a real hub in this process, on a free port, with a builder
// pane, and what `hm hook` needs to act as that pane's CLI.
type hookHub struct {
	*hub.Hub
	root string
}

func startHookHub(t *testing.T, settings string) *hookHub {
	t.Helper()
	hh, _ := startHookHubStop(t, settings)
	return hh
}

// startHookHubStop is startHookHub that also returns what stops the hub
// (as hubtest.Start's stop); hookHubAgain starts another on its root.
func startHookHubStop(t *testing.T, settings string) (*hookHub, func()) {
	t.Helper()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.Settings(), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	h, stop := hubtest.Start(t, root, hookHubOptions)
	return &hookHub{Hub: h, root: root}, stop
}

// hookHubAgain starts a new hub on root, as `hm up` after the last hub died.
func hookHubAgain(t *testing.T, root string) *hookHub {
	t.Helper()
	h, _ := hubtest.Start(t, root, hookHubOptions)
	return &hookHub{Hub: h, root: root}
}

var hookHubOptions = hub.Options{HandoffEvery: time.Hour,
	PaneMinBackoff: 50 * time.Millisecond, PaneMaxBackoff: 200 * time.Millisecond, StopGracePeriod: time.Second}

// env is the environment of the builder pane's CLI, and so of its hooks.
func (hh *hookHub) env() map[string]string {
	return map[string]string{"HM_PORT": strconv.Itoa(hh.Port), "HM_TOKEN": hh.Tokens.Issue("builder"),
		"SQUIDRUN_ROLE": "builder", "SQUIDRUN_ROOT": hh.root}
}

// downEnv is env with the hub gone: $HM_PORT a port nothing listens on,
// in a root of its own without a hub.json (in the hub's root the hook
// would find the hub through its hub.json, as the hooks of a pane a new
// hub adopted do: cmdline's TestDiscoverPortOfAdoptedPane).
func (hh *hookHub) downEnv(t testing.TB) map[string]string {
	t.Helper()
	env := hh.env()
	env["HM_PORT"], env["SQUIDRUN_ROOT"] = testutil.ClosedPort(t), t.TempDir()
	return env
}

// runHookWith runs `hm hook cli event` with input on stdin and environment
// vars, and returns its exit code, stdout and stderr.
func runHookWith(t testing.TB, vars map[string]string, input []byte, cli, event string) (int, string, string) {
	t.Helper()
	return runHookArgs(t, vars, input, cli, event)
}

// runHookArgs runs `hm hook args...` as runHookWith does.
func runHookArgs(t testing.TB, vars map[string]string, input []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: bytes.NewReader(input), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	code := MainContext(context.Background(), append([]string{"hook"}, args...), env)
	return code, out.String(), errb.String()
}

// hook runs a hook of the builder pane's CLI; it must exit 0 and write
// nothing on stderr.
func (hh *hookHub) hook(t testing.TB, cli, event string, input []byte) string {
	t.Helper()
	code, out, errs := runHookWith(t, hh.env(), input, cli, event)
	if code != ExitOK || errs != "" {
		t.Fatalf("hm hook %s %s: exit %d, stderr %q", cli, event, code, errs)
	}
	return out
}

// drain claims whatever builder's pane still has queued.
func (hh *hookHub) drain(t testing.TB) {
	t.Helper()
	for hh.hook(t, "claude", "PostToolUse", []byte("{}")) != "" {
	}
}

// drainSession waits until the session's first message to builder is in
// its pane's queue (a hub on a loaded machine may not have queued it yet,
// and a hook then claims nothing), then drains.
func (hh *hookHub) drainSession(t testing.TB) {
	t.Helper()
	hh.waitQueued(t, 1)
	hh.drain(t)
}

// waitQueued waits until builder's pane holds at least n messages: a
// message's ACK comes when the ledger committed it, and its way into the
// pane's queue may still be under way when a hook's claim looks there.
func (hh *hookHub) waitQueued(t testing.TB, n int) {
	t.Helper()
	poll.For(t, 20*time.Second, func() error {
		for _, p := range hh.Snapshot(context.Background()).Panes {
			if p.Role == "builder" {
				return poll.Want(p.Queued >= n, "builder's pane holds %d messages, want %d", p.Queued, n)
			}
		}
		return errors.New("no builder pane")
	})
}

// sender connects as role with the operator token.
func (hh *hookHub) sender(t testing.TB, role string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, hh.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	tok, err := hh.Layout.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, role, tok, false); err != nil {
		t.Fatal(err)
	}
	return c
}

func sendTo(t testing.TB, c *client.Client, target, id, content string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, _, err := c.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: target, MessageID: id, Content: content})
	if err != nil || !ack.OK {
		t.Fatalf("send %s: %v %+v", id, err, ack)
	}
}

func (hh *hookHub) row(t testing.TB, id string) journal.Message {
	t.Helper()
	m, err := hh.Ledger.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("ledger row %s: %v", id, err)
	}
	return m
}

// hookOutput decodes what a hook printed: the context it added, or the
// reason it blocked a stop with.
type hookOutput struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func decodeHook(t testing.TB, out string) (hookOutput, string) {
	t.Helper()
	var o hookOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("hook output is not JSON: %v\n%s", err, out)
	}
	return o, o.HookSpecificOutput.AdditionalContext + o.Reason
}

var (
	dateRE   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)
	markerRE = regexp.MustCompile(`\[hm:([A-Za-z0-9_.:-]+)\]`)
)

// TestHookFixtures replays each recorded hook input (testdata/hook/fixtures,
// one per event of each CLI, from the CLIs' documented input schemas)
// through `hm hook` against a real hub whose builder pane has one message
// queued, and compares the output with its golden file: the output format
// each CLI expects (hookSpecificOutput.additionalContext, a blocked stop's
// decision and reason), nothing for a stop that a stop hook already
// continued. A message the hook printed is recorded delivered.context; one
// it did not print stays queued for the pane.
func TestHookFixtures(t *testing.T) {
	hh := startHookHub(t, neverReady)
	hh.drainSession(t) // the session's first message to builder: every SessionStart then shows the handoff
	handoff := "# Session handoff\n\n## Coverage\n\n| role | sent |\n|---|---|\n| builder | 3 |\n"
	if err := os.WriteFile(hh.Layout.Session(), []byte(handoff), 0o600); err != nil {
		t.Fatal(err)
	}
	arch := hh.sender(t, "architect")
	fixtures, err := filepath.Glob(filepath.Join("testdata", "hook", "fixtures", "*.json"))
	if err != nil || len(fixtures) < 17 {
		t.Fatalf("fixtures: %v %v", fixtures, err)
	}
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			cli, event, _ := strings.Cut(name, "-")
			event, variant, _ := strings.Cut(event, "-")
			input, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			id := "msg-" + name
			sendTo(t, arch, "builder", id, "please look at "+name)
			out := hh.hook(t, cli, event, input)
			got := strings.ReplaceAll(dateRE.ReplaceAllString(out, "YYYY-MM-DD"), hh.root, "$ROOT")
			checkGolden(t, filepath.Join("testdata", "hook", name+".golden"), got)
			m := hh.row(t, id)
			switch {
			case variant == "active":
				if out != "" || m.Status != status.Brokered {
					t.Errorf("stop_hook_active: printed %q, row %s/%s: want nothing printed, the message left for the pane", out, m.Status, m.AckStatus)
				}
			case event == "SessionStart":
				// A session start begins no turn: its context carries the
				// session line, and a waiting message is left to be typed.
				if strings.Contains(out, "[hm:"+id+"]") || m.Status != status.Brokered {
					t.Errorf("%s: row %s/%s: want it left for the pane, not in the SessionStart context:\n%s", id, m.Status, m.AckStatus, out)
				}
			default:
				o, text := decodeHook(t, out)
				if !strings.Contains(text, "[hm:"+id+"]") || m.Status != status.Routed || m.AckStatus != status.DeliveredContext {
					t.Errorf("%s: row %s/%s, want routed/delivered.context and its marker in the output", id, m.Status, m.AckStatus)
				}
				if o.HookSpecificOutput.HookEventName != "" && o.HookSpecificOutput.HookEventName != event {
					t.Errorf("hookEventName %q, want %q", o.HookSpecificOutput.HookEventName, event)
				}
			}
			hh.drain(t)
		})
	}
}

// TestHookSessionStart: the session's first message to the role, when the
// hook claims it, stands for the session context (no handoff besides); once
// it is delivered, a SessionStart (a restarted or compacted agent) gets the
// session line, the brief and the handoff, a handoff over the cap as its
// path and a preview.
func TestHookSessionStart(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	startID := "session-" + strconv.Itoa(hh.Session) + "-builder"
	_, text := decodeHook(t, hh.hook(t, "claude", "SessionStart", []byte(`{"source":"startup"}`)))
	if !strings.Contains(text, "[hm:"+startID+"]") || strings.Contains(text, "The session handoff") {
		t.Errorf("first SessionStart: want the startup message %s and no handoff besides:\n%s", startID, text)
	}
	if m := hh.row(t, startID); m.AckStatus != status.DeliveredContext {
		t.Errorf("startup message %s/%s, want delivered.context", m.Status, m.AckStatus)
	}
	big := "# Session handoff\n" + strings.Repeat("| a | table row of the handoff |\n", 1200)
	if err := os.WriteFile(hh.Layout.Session(), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	_, text = decodeHook(t, hh.hook(t, "codex", "SessionStart", []byte(`{"source":"compact"}`)))
	for _, want := range []string{"# SQUIDRUN SESSION: Builder - Started ", "You are the Builder", "The session handoff is " + hh.Layout.Session() + " (", "read it", "| a | table row"} {
		if !strings.Contains(text, want) {
			t.Errorf("SessionStart after compaction lacks %q:\n%.600s", want, text)
		}
	}
	if n := hook.Len(text); n > hook.MaxContext || n < 2000 {
		t.Errorf("context of %d characters, want the path and a preview under %d", n, hook.MaxContext)
	}
}

// TestHookContextCap: the messages a hook prints stay under 10,000
// characters; those that do not fit stay queued, in order, for the next
// hook (or the typing); a body over 4 KiB is a pointer line to its file.
func TestHookContextCap(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	hh.drainSession(t)
	arch := hh.sender(t, "architect")
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("big-%d", i)
		ids = append(ids, id)
		sendTo(t, arch, "builder", id, fmt.Sprintf("part %d: %s", i, strings.Repeat("x", 3000)))
	}
	sendTo(t, arch, "builder", "huge", "huge: "+strings.Repeat("y", 20000))
	hh.waitQueued(t, 7)
	var seen []string
	for round := 0; round < 6 && len(seen) < 7; round++ {
		_, text := decodeHook(t, hh.hook(t, "claude", "UserPromptSubmit", []byte(`{"prompt":"go on"}`)))
		if n := hook.Len(text); n > hook.MaxContext {
			t.Fatalf("round %d: context of %d characters, over %d", round, n, hook.MaxContext)
		}
		for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
			seen = append(seen, m[1])
		}
		if round == 0 && len(seen) != 3 {
			t.Errorf("first hook carried %v, want the first three 3,000-character messages", seen)
		}
	}
	if want := append(ids, "huge"); strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("messages in order across hooks %v, want %v, each once", seen, want)
	}
	for _, id := range seen {
		if m := hh.row(t, id); m.AckStatus != status.DeliveredContext {
			t.Errorf("%s: %s, want delivered.context", id, m.AckStatus)
		}
	}
	if b, err := os.ReadFile(filepath.Join(hh.Layout.FullMessages(), "huge.txt")); err != nil || !strings.Contains(string(b), strings.Repeat("y", 20000)) {
		t.Errorf("pointer file of the long message: %v, %d bytes", err, len(b))
	}
}

// TestHookReceipt: a submitted prompt's [hm:<id>] markers are receipts,
// as `hm receipt` reads them: the message becomes delivered.verified, and
// two in one prompt are recorded as a merge. A marker proves nothing in a
// prompt that carries hm's own hook output: a message Gemini's AfterAgent
// hook handed the agent (delivered.context) whose reason then came back
// as a prompt stays delivered.context (#32: Gemini drops the outcome of a
// cancelled turn, and the ledger said delivered.verified for a message no
// request to the model carried).
func TestHookReceipt(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	hh.drain(t)
	arch := hh.sender(t, "architect")
	sendTo(t, arch, "builder", "r-ctx", "claimed by a stop hook")
	var stop hookOutput
	if err := json.Unmarshal([]byte(hh.hook(t, "gemini", "AfterAgent", []byte(`{}`))), &stop); err != nil || !strings.Contains(stop.Reason, "[hm:r-ctx]") {
		t.Fatalf("AfterAgent output %+v, %v: want r-ctx in its reason", stop, err)
	}
	prompt := func(p string) []byte {
		in, _ := json.Marshal(map[string]string{"hook_event_name": "BeforeAgent", "prompt": p})
		return in
	}
	hh.hook(t, "gemini", "BeforeAgent", prompt(stop.Reason))
	// Each prompt's receipts are recorded before its hook claims what is
	// queued (here the pane types nothing, so the hook claims them too).
	sendTo(t, arch, "builder", "r-1", "read me")
	sendTo(t, arch, "builder", "r-2", "and me")
	sendTo(t, arch, "oracle", "r-other", "not builder's")
	hh.hook(t, "gemini", "BeforeAgent", prompt("[AGENT MSG - reply via hm-send] (ARCH #2): read me [hm:r-1]\n[AGENT MSG - reply via hm-send] (ARCH #3): and me [hm:r-2] [hm:r-other]"))
	sendTo(t, arch, "builder", "r-3", "me alone")
	hh.hook(t, "claude", "UserPromptSubmit", prompt("[AGENT MSG - reply via hm-send] (ARCH #4): me alone [hm:r-3]"))
	for _, tc := range []struct {
		id    string
		stage status.Stage
		event status.Event
	}{
		{"r-ctx", status.DeliveredContext, status.EventContext},
		{"r-1", status.DeliveredVerified, status.EventMerged},
		{"r-2", status.DeliveredVerified, status.EventMerged},
		{"r-3", status.DeliveredVerified, status.EventAcked},
	} {
		if m := hh.row(t, tc.id); m.AckStatus != tc.stage {
			t.Errorf("%s: %s, want %s", tc.id, m.AckStatus, tc.stage)
		}
		evs, err := hh.Ledger.Events(context.Background(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(evs, func(e journal.Event) bool { return e.Event == tc.event }) {
			t.Errorf("%s: no %s event", tc.id, tc.event)
		}
	}
	if m := hh.row(t, "r-other"); m.AckStatus == status.DeliveredVerified {
		t.Error("a marker of a message to another role verified it")
	}
}

// TestHookNeverFails: whatever goes wrong, `hm hook` exits 0 and prints
// nothing on stdout (a hook must never block the agent): the hub down, a
// token the hub does not know, input that is not JSON, an event hm does
// not act on.
func TestHookNeverFails(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	with := func(k, v string) map[string]string {
		env := hh.env()
		env[k] = v
		return env
	}
	tests := []struct {
		name       string
		env        map[string]string
		input      string
		cli, event string
		stderr     string
	}{
		{name: "hub down", env: hh.downEnv(t), cli: "claude", event: "UserPromptSubmit", input: `{"prompt":"hi [hm:x]"}`},
		{name: "hub down, session start", env: hh.downEnv(t), cli: "gemini", event: "SessionStart", input: `{"source":"startup"}`},
		{name: "bad token", env: with("HM_TOKEN", "nope"), cli: "codex", event: "Stop", input: `{"stop_hook_active":false}`},
		{name: "not JSON", env: hh.env(), cli: "claude", event: "Stop", input: `garbage`},
		{name: "unknown event", env: hh.env(), cli: "claude", event: "PreCompact", stderr: "claude has no hook event"},
		{name: "unknown CLI", env: hh.env(), cli: "aider", event: "Stop", stderr: "unknown CLI"},
	}
	arch := hh.sender(t, "architect")
	sendTo(t, arch, "builder", "kept", "stays queued through all of this")
	for _, tt := range tests {
		code, out, errs := runHookWith(t, tt.env, []byte(tt.input), tt.cli, tt.event)
		if code != ExitOK || out != "" || (tt.stderr == "") != (errs == "") || !strings.Contains(errs, tt.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0, nothing printed, stderr %q", tt.name, code, out, errs, tt.stderr)
		}
	}
	if m := hh.row(t, "kept"); m.Status != status.Brokered {
		t.Errorf("kept: %s/%s, want still queued for the pane", m.Status, m.AckStatus)
	}
}

// fakeAgentBin builds the fake agent CLI (agent/internal/fakeagent) once.
func fakeAgentBin(t testing.TB) string { return testutil.FakeAgent(t) }

// TestHookRacesTyping: builder's pane types into a fake agent CLI while
// hooks of that CLI (prompt submits, tool calls, stops, from three
// goroutines at once, and Claude's asyncRewake Stop hook waiting in a
// fourth) claim from the same queue. Every message reaches the
// agent exactly once: in the fake agent's prompt log or in one hook's
// output, never both, never neither, and the ledger says which.
func TestHookRacesTyping(t *testing.T) {
	t.Parallel()
	root := t.TempDir() // the prompt log lives beside the hub's root
	logPath := filepath.Join(root, "builder.jsonl")
	settings := fmt.Sprintf(`{"profiles":{"fake":{"ready":[">"],"quietMs":60,"enterDelayMs":40}},"panes":[
 {"role":"architect","transport":"ws"},
 {"role":"builder","command":%q,"profile":"fake"},
 {"role":"oracle","transport":"ws"}]}`, "FAKEAGENT_ENTER_MS=20 FAKEAGENT_LOG="+logPath+" "+fakeAgentBin(t))
	hh := startHookHub(t, settings)
	arch := hh.sender(t, "architect")
	const n = 30
	ids := []string{"session-" + strconv.Itoa(hh.Session) + "-builder"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var outputs, woken []string
	stop := make(chan struct{})
	events := [][2]string{{"claude", "UserPromptSubmit"}, {"claude", "PostToolUse"}, {"codex", "Stop"}, {"gemini", "AfterTool"}}
	for g := range 3 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(100+60*g) * time.Millisecond):
				}
				ev := events[i%len(events)]
				code, out, errs := runHookWith(t, hh.env(), []byte(`{"prompt":"working","stop_hook_active":false}`), ev[0], ev[1])
				if code != ExitOK || errs != "" {
					t.Errorf("hm hook %v: exit %d, stderr %q", ev, code, errs)
				}
				if out != "" {
					mu.Lock()
					outputs = append(outputs, out)
					mu.Unlock()
				}
			}
		})
	}
	// Claude's asyncRewake Stop hook waits beside them, as it does in the
	// background of an idle session: what it takes is on its stderr.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond): // the agent works a while between stops
			}
			code, out, errs := runHookArgs(t, hh.env(), []byte(`{"stop_hook_active":false}`), "claude", "Stop", "--wait", "300ms")
			switch {
			case out != "" || (code == ExitWake) != (errs != ""):
				t.Errorf("hm hook claude Stop --wait: exit %d, stdout %q, stderr %q", code, out, errs)
			case code == ExitWake:
				mu.Lock()
				woken = append(woken, errs)
				mu.Unlock()
			}
		}
	})
	for i := range n {
		id := fmt.Sprintf("race-%02d", i)
		ids = append(ids, id)
		sendTo(t, arch, "builder", id, fmt.Sprintf("message %d of the race", i))
		time.Sleep(30 * time.Millisecond)
	}
	settled := func(id string) bool {
		m := hh.row(t, id)
		return m.Status == status.Routed || m.Status == status.Acked
	}
	poll.For(t, 60*time.Second, func() error {
		for _, id := range ids {
			if !settled(id) {
				return fmt.Errorf("%s not delivered yet", id)
			}
		}
		return nil
	})
	close(stop)
	wg.Wait()
	// The last typing's prompt record may still be on its way.
	poll.For(t, 10*time.Second, func() error {
		typedRows := 0
		for _, id := range ids {
			if hh.row(t, id).AckStatus != status.DeliveredContext {
				typedRows++
			}
		}
		ps, err := promptlog.Read(logPath)
		return poll.Want(err == nil && len(ps) >= typedRows, "%d prompts logged of %d typed", len(ps), typedRows)
	})
	count := map[string]int{}
	hooked := map[string]bool{}
	for _, out := range outputs {
		_, text := decodeHook(t, out)
		for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
			count[m[1]]++
			hooked[m[1]] = true
		}
	}
	for _, text := range woken {
		for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
			count[m[1]]++
			hooked[m[1]] = true
		}
	}
	ps, err := promptlog.Read(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		for _, m := range markerRE.FindAllStringSubmatch(p.Prompt, -1) {
			count[m[1]]++
		}
	}
	byHook := 0
	for _, id := range ids {
		m := hh.row(t, id)
		if count[id] != 1 {
			t.Errorf("%s reached the agent %d times (hook: %v), want exactly once", id, count[id], hooked[id])
		}
		if hooked[id] != (m.AckStatus == status.DeliveredContext) {
			t.Errorf("%s: ledger %s/%s, hook output %v: the ledger must say which path took it", id, m.Status, m.AckStatus, hooked[id])
		}
		if hooked[id] {
			byHook++
		}
	}
	t.Logf("%d of %d messages by hook, %d typed; %d hook outputs, %d wakes", byHook, len(ids), len(ids)-byHook, len(outputs), len(woken))
}

// TestHookLiveness: the state each hook event tells reaches the pane, and
// `hm status` (its STATE column and --json "state") shows it: a permission
// Notification is waiting_for_human, a prompt busy, a Stop ready.
func TestHookLiveness(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	steps := []struct {
		cli, event, input, want string
	}{
		{"claude", "Notification", `{"hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`, "waiting_for_human"},
		{"claude", "UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"go on"}`, "busy"},
		{"claude", "Stop", `{"hook_event_name":"Stop"}`, "ready"},
		{"gemini", "Notification", `{"hook_event_name":"Notification","notification_type":"ToolPermission","message":"Tool requires confirmation"}`, "waiting_for_human"},
		{"claude", "Notification", `{"message":"Claude is waiting for your input","notification_type":"idle_prompt"}`, "ready"},
		{"gemini", "BeforeAgent", `{"prompt":"x"}`, "busy"},
		{"gemini", "AfterAgent", `{}`, "ready"},
	}
	vars := hh.env()
	delete(vars, "HM_TOKEN")
	delete(vars, "SQUIDRUN_ROLE")
	for _, s := range steps {
		if out := hh.hook(t, s.cli, s.event, []byte(s.input)); out != "" && s.event == "Notification" {
			t.Fatalf("%s %s printed %q", s.cli, s.event, out) // it takes nothing
		}
		// The claim is answered after the state is recorded: no wait.
		if got := paneStateOf(t, vars, "builder"); got != s.want {
			t.Fatalf("after %s %s: builder state %q, want %q", s.cli, s.event, got, s.want)
		}
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
		if code := MainContext(context.Background(), []string{"status"}, env); code != ExitOK {
			t.Fatalf("hm status: exit %d, %s", code, errb.String())
		}
		if !regexp.MustCompile(`(?m)^builder\s+2\s+\d+\s+` + s.want + `\b`).MatchString(out.String()) {
			t.Fatalf("after %s %s: hm status shows no builder %s:\n%s", s.cli, s.event, s.want, out.String())
		}
	}
}

// TestHookWake: `hm hook claude Stop --wait D`, Claude Code's asyncRewake
// Stop hook, waits in the background for the next message queued for its
// pane and exits 2 with it on stderr (which wakes the idle session); the
// ledger records it delivered.context by "claude Stop --wait". It exits 0
// with nothing printed when nothing comes, when the agent is at work again
// (a prompt hook), when the hub is down, and for CLIs without such a hook.
func TestHookWake(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	arch := hh.sender(t, "architect")
	hh.drainSession(t) // the session's first message
	stop := []byte(`{"hook_event_name":"Stop","stop_hook_active":false}`)

	type result struct {
		code     int
		out, err string
	}
	wait := func(args ...string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			code, out, errs := runHookArgs(t, hh.env(), stop, args...)
			ch <- result{code, out, errs}
		}()
		return ch
	}
	got := func(ch <-chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("hm hook claude Stop --wait did not end")
		}
		return result{}
	}

	t.Run("MessageWakes", func(t *testing.T) {
		ch := wait("claude", "Stop", "--wait", "20s")
		sendTo(t, arch, "builder", "wake-1", "(ARCH #9): are you there?")
		r := got(ch)
		if r.code != ExitWake || r.out != "" || !strings.Contains(r.err, "arrived while you were idle") ||
			!strings.Contains(r.err, "(ARCH #9): are you there?") || !strings.Contains(r.err, "[hm:wake-1]") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and the message on stderr", r.code, r.out, r.err)
		}
		m := hh.row(t, "wake-1")
		if m.Status != status.Routed || m.AckStatus != status.DeliveredContext {
			t.Errorf("wake-1: %s/%s, want routed/delivered.context", m.Status, m.AckStatus)
		}
		evs, err := hh.Ledger.Events(context.Background(), "wake-1")
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Event != status.EventContext || !strings.Contains(string(last.Detail), `"hook":"claude Stop --wait"`) {
			t.Errorf("last event %s %s, want context by claude Stop --wait", last.Event, last.Detail)
		}
	})
	t.Run("NothingComes", func(t *testing.T) {
		if r := got(wait("claude", "Stop", "--wait", "200ms")); r.code != ExitOK || r.out != "" || r.err != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.out, r.err)
		}
	})
	t.Run("PromptReleases", func(t *testing.T) {
		ch := wait("claude", "Stop", "--wait", "10m")
		var r result
		poll.For(t, 20*time.Second, func() error {
			hh.hook(t, "claude", "UserPromptSubmit", []byte(`{"prompt":"back to work"}`))
			select {
			case r = <-ch:
				return nil
			case <-time.After(100 * time.Millisecond):
				return errors.New("the waiting hook is still waiting after a prompt")
			}
		})
		if r.code != ExitOK || r.out != "" || r.err != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.out, r.err)
		}
		sendTo(t, arch, "builder", "wake-2", "for the pane")
		if m := hh.row(t, "wake-2"); m.Status != status.Brokered {
			t.Errorf("wake-2: %s/%s, want still queued for the pane", m.Status, m.AckStatus)
		}
		hh.drain(t)
	})
	t.Run("NotWhereNoAsyncRewake", func(t *testing.T) {
		for _, args := range [][]string{{"codex", "Stop", "--wait", "1s"}, {"gemini", "AfterAgent", "--wait", "1s"}, {"claude", "UserPromptSubmit", "--wait", "1s"}} {
			r := got(wait(args...))
			if r.code != ExitOK || r.out != "" || !strings.Contains(r.err, "--wait is for Claude Code's Stop hook") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and one line naming the rule", args, r.code, r.out, r.err)
			}
		}
	})
	t.Run("HubDown", func(t *testing.T) {
		if code, out, errs := runHookArgs(t, hh.downEnv(t), stop, "claude", "Stop", "--wait", "10m"); code != ExitOK || out != "" || errs != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and nothing", code, out, errs)
		}
	})
}

// paneStateOf is role's pane state as `hm status --json` shows it.
func paneStateOf(t *testing.T, vars map[string]string, role string) string {
	t.Helper()
	return paneOf(t, vars, role).State
}

// paneOf is role's pane in hm status --json.
func paneOf(t *testing.T, vars map[string]string, role string) hub.PaneStatus {
	t.Helper()
	var st hub.Status
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	if code := MainContext(context.Background(), []string{"status", "--json"}, env); code != ExitOK {
		t.Fatalf("hm status --json: exit %d, %s", code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Panes {
		if p.Role == role {
			return p
		}
	}
	return hub.PaneStatus{}
}

// TestHookStopBlockedIsBusy: a Stop hook that carries queued messages
// blocks the stop, so the agent goes on working on them; its claim-ack
// says so and the pane is busy, not ready. Before the fix the pane stayed
// ready (the Stop claim's state) while the agent worked: hm would type
// into a busy program. A Stop with nothing to carry leaves it ready.
func TestHookStopBlockedIsBusy(t *testing.T) {
	t.Parallel()
	hh := startHookHub(t, neverReady)
	vars := hh.env() // hm status with the operator token
	delete(vars, "HM_TOKEN")
	delete(vars, "SQUIDRUN_ROLE")
	stop := []byte(`{"hook_event_name":"Stop","stop_hook_active":false}`)
	hh.drainSession(t)
	if out := hh.hook(t, "claude", "Stop", stop); out != "" {
		t.Fatalf("Stop with nothing queued printed %q", out)
	}
	if got := paneStateOf(t, vars, "builder"); got != "ready" {
		t.Fatalf("after an empty Stop: builder %q, want ready", got)
	}
	sendTo(t, hh.sender(t, "architect"), "builder", "stop-busy-1", "(ARCH #1): one more thing")
	hh.waitQueued(t, 1)
	// A hub that does not answer within the hook's budget (hookClaimTimeout)
	// gets nothing printed, as a hub that is down, and its claim goes back
	// to the pane when the lease ends: make test under a CPU hog, the race
	// step and the real-CLI suite at once saw that once. The CLI's next
	// Stop asks again; so does the test.
	var out string
	poll.For(t, time.Minute, func() error {
		out = hh.hook(t, "claude", "Stop", stop)
		return poll.Want(strings.Contains(out, `"decision":"block"`) && strings.Contains(out, "one more thing"),
			"Stop with a message queued printed %q, want a block carrying it", out)
	})
	if got := paneStateOf(t, vars, "builder"); got != "busy" {
		t.Fatalf("after a Stop that blocked with a message: builder %q, want busy", got)
	}
	if m := hh.row(t, "stop-busy-1"); m.AckStatus != status.DeliveredContext {
		t.Fatalf("stop-busy-1: %s/%s, want delivered.context", m.Status, m.AckStatus)
	}
	// The turn the block began ends with a Stop that says a stop hook
	// already made it go on (Claude's Stop, Gemini's AfterAgent after its
	// deny): it claims nothing, and the pane is ready. Before the fix that
	// Stop told the hub nothing and the pane stayed busy (the real Gemini:
	// a minute's wait per message). test fails before the fix.
	//
	// Each CLI on a hub of its own: the message one leaves for the pane
	// is typed into a program that reads nothing, and its unread input
	// keeps that pane busy for a minute (make test saw the next CLI's
	// look find it so).
	for i, c := range []struct{ cli, event string }{{"claude", "Stop"}, {"gemini", "AfterAgent"}} {
		hh := startHookHub(t, neverReady)
		vars := hh.env()
		delete(vars, "HM_TOKEN")
		delete(vars, "SQUIDRUN_ROLE")
		hh.drainSession(t)
		first, second := fmt.Sprintf("stop-cont-%d-a", i), fmt.Sprintf("stop-cont-%d-b", i)
		sendTo(t, hh.sender(t, "architect"), "builder", first, fmt.Sprintf("(ARCH #%d): carried by the block", 3+2*i))
		hh.waitQueued(t, 1)
		if out := hh.hook(t, c.cli, c.event, stop); !strings.Contains(out, first) {
			t.Fatalf("%s %s with %s queued printed %q, want it carried", c.cli, c.event, first, out)
		}
		if got := paneStateOf(t, vars, "builder"); got != "busy" {
			t.Fatalf("%s %s blocked: builder %q, want busy", c.cli, c.event, got)
		}
		sendTo(t, hh.sender(t, "architect"), "builder", second, fmt.Sprintf("(ARCH #%d): for the pane", 4+2*i))
		hh.waitQueued(t, 1)
		active := []byte(`{"hook_event_name":"` + c.event + `","stop_hook_active":true}`)
		if out := hh.hook(t, c.cli, c.event, active); out != "" {
			t.Fatalf("%s %s stop_hook_active printed %q, want nothing (no second block)", c.cli, c.event, out)
		}
		// Ready, or busy typing the message left for it: the pane,
		// ready, may have taken it off its queue already (on a loaded
		// machine, before this look).
		if p := paneOf(t, vars, "builder"); p.State != "ready" && (p.State != "busy" || p.Queued != 0) {
			t.Fatalf("after %s %s with stop_hook_active (the continued turn ended): builder %q with %d queued, want ready (or busy typing %s)",
				c.cli, c.event, p.State, p.Queued, second)
		}
		// Left for the pane, which the hook made ready: it may be typing
		// it already, but no hook took it.
		if m := hh.row(t, second); m.AckStatus == status.DeliveredContext {
			t.Fatalf("%s: %s/%s after a stop_hook_active Stop, want it left for the pane", second, m.Status, m.AckStatus)
		}
	}
}

// TestHookLimitsInsideLease: what hm hook waits for the claim's answer
// (the dial included) and then for its claim-ack stays inside the hub's
// claim lease with room to print: a claim acked after the lease would be
// given back to the pane after being printed, and typed as well.
func TestHookLimitsInsideLease(t *testing.T) {
	if got, lease := hookClaimTimeout+hookAckTimeout, broker.DefaultClaimLease; got >= lease-500*time.Millisecond {
		t.Errorf("claim %v + ack %v = %v, want well under the lease %v", hookClaimTimeout, hookAckTimeout, got, lease)
	}
	if hookDialTimeout >= hookClaimTimeout {
		t.Errorf("dial limit %v not inside the claim's %v", hookDialTimeout, hookClaimTimeout)
	}
}
