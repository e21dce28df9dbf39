package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/internal/hub"
)

// reloadSettings is a settings.json whose three default roles are
// WebSocket members (no pane: the test's panes are the ones it names) and
// whose panes are given as "role": command pairs; the "held" profile reads
// the fake agent's dialog as a dialog, so that what is sent to a pane that
// shows one stays queued.
func reloadSettings(extra string, panes ...[2]string) string {
	var b strings.Builder
	b.WriteString(`{"background":{"max":0},"profiles":{"held":{"blocked":["Do you want to proceed?"]}}` + extra + `,"panes":[`)
	b.WriteString(`{"role":"architect","transport":"ws"},{"role":"builder","transport":"ws"},{"role":"oracle","transport":"ws"}`)
	for _, p := range panes {
		profile := "default"
		if strings.Contains(p[1], "FAKEAGENT_DIALOG_MS") {
			profile = "held"
		}
		fmt.Fprintf(&b, `,{"role":%q,"command":%q,"profile":%q}`, p[0], p[1], profile)
	}
	b.WriteString("]}")
	return b.String()
}

// panePIDs maps each pane the hub hosts to its program's pid.
func panePIDs(th *testHub) map[string]int {
	out := map[string]int{}
	for _, p := range th.h.Snapshot(context.Background()).Panes {
		out[p.Role] = p.PID
	}
	return out
}

// waitPIDs waits until every role of roles runs a program, and returns the
// pids.
func waitPIDs(t *testing.T, th *testHub, roles ...string) map[string]int {
	t.Helper()
	var pids map[string]int
	poll.For(t, 30*time.Second, func() error {
		pids = panePIDs(th)
		for _, r := range roles {
			if pids[r] == 0 {
				return fmt.Errorf("pane %s runs no program: %v", r, pids)
			}
		}
		return nil
	})
	return pids
}

func writeSettingsFile(t *testing.T, th *testHub, s string) {
	t.Helper()
	if err := os.WriteFile(th.h.Layout.Settings(), []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// countPrompts counts the prompts of the fake agent log at path that
// contain sub.
func countPrompts(t *testing.T, path, sub string) int {
	n := 0
	for _, p := range prompts(t, path) {
		if strings.Contains(p, sub) {
			n++
		}
	}
	return n
}

// TestReloadPanes: hm reload applies a changed settings.json. A pane
// removed from it ends and what it had queued fails (pane_failed), and a
// send to it is then refused invalid_target; a pane added starts, gets its
// session line and then messages; a pane whose command changed is
// restarted (another pid) and what it had queued is typed into the new
// program; an unchanged pane keeps its pid and gets no second session
// line. Keys the hub reads only at its start keep their value and are
// named.
func TestReloadPanes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	held := "FAKEAGENT_DIALOG_MS=600000"
	log := func(name string) string { return filepath.Join(root, name+".jsonl") }
	th := startHubAt(t, root, hubConfig{settings: reloadSettings(`,"port":9901`,
		[2]string{"gone", agentCmd(root, "gone", held)},
		[2]string{"keep", agentCmd(root, "keep")}, // its pane id was its place after gone
		[2]string{"swap", agentCmd(root, "swap", held)})})
	before := waitPIDs(t, th, "keep", "gone", "swap")
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(countPrompts(t, log("keep"), "# SQUIDRUN SESSION") == 1, "keep's session line typed")
	})
	op := th.as("user", false)
	for _, m := range [][2]string{{"gone", "m-gone"}, {"swap", "m-swap"}} {
		if ack := send(t, op, proto.Frame{Target: m[0], Content: "queued for " + m[0], MessageID: m[1]}); !ack.OK {
			t.Fatalf("send to %s: %+v", m[0], ack)
		}
	}

	writeSettingsFile(t, th, reloadSettings(`,"port":9902,"telegram":{"chatId":"42"}`,
		[2]string{"keep", agentCmd(root, "keep")},
		[2]string{"swap", agentCmd(root, "swap-new")},
		[2]string{"fresh", agentCmd(root, "fresh")}))
	res, err := th.h.Reload(ctxT(t))
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"added", res.Added, []string{"fresh"}},
		{"removed", res.Removed, []string{"gone"}},
		{"restarted", res.Restarted, []string{"swap"}},
		{"unchanged", res.Unchanged, []string{"keep"}},
		{"needs restart", res.NeedsRestart, []string{"port", "telegram"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v (result %+v)", c.what, c.got, c.want, res)
		}
	}
	if th.h.Team().Port != 9901 || th.h.Team().Telegram.ChatID != "" {
		t.Errorf("keys read at start changed without a restart: port %d, telegram %+v", th.h.Team().Port, th.h.Team().Telegram)
	}

	after := waitPIDs(t, th, "keep", "swap", "fresh")
	if after["keep"] != before["keep"] {
		t.Errorf("the unchanged pane was restarted: pid %d, then %d", before["keep"], after["keep"])
	}
	if after["swap"] == before["swap"] {
		t.Errorf("the changed pane kept its program (pid %d)", after["swap"])
	}
	if _, ok := after["gone"]; ok {
		t.Errorf("the removed pane is still listed: %v", after)
	}

	// The removed pane's queued message failed, with the reason; a send
	// to it is refused as an unknown target.
	poll.For(t, 30*time.Second, func() error {
		r := row(t, th, "m-gone")
		return poll.Want(r.Status == status.Failed && r.ErrorCode == status.CodePaneFailed, "m-gone failed pane_failed, row %+v", r)
	})
	if ack := send(t, op, proto.Frame{Target: "gone", Content: "too late", MessageID: "m-late"}); ack.OK || ack.Error == nil || *ack.Error != string(status.CodeInvalidTarget) {
		t.Errorf("send to the removed pane: %+v, want invalid_target", ack)
	}
	// The changed pane's queued message is typed into its new program.
	poll.For(t, 30*time.Second, func() error {
		r := row(t, th, "m-swap")
		return poll.Want(countPrompts(t, log("swap-new"), "[hm:m-swap]") == 1 && r.Status == status.Routed, "m-swap typed once into the new program, row %+v", r)
	})
	// The added pane got its session line, then takes messages.
	if ack := send(t, op, proto.Frame{Target: "fresh", Content: "welcome", MessageID: "m-fresh"}); !ack.OK {
		t.Fatalf("send to the added pane: %+v", ack)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(countPrompts(t, log("fresh"), "# SQUIDRUN SESSION") == 1 && countPrompts(t, log("fresh"), "[hm:m-fresh]") == 1,
			"fresh's session line and m-fresh typed")
	})
	// The unchanged pane was not typed into again.
	if n := countPrompts(t, log("keep"), "# SQUIDRUN SESSION"); n != 1 {
		t.Errorf("the unchanged pane got %d session lines, want 1", n)
	}
	for _, p := range prompts(t, log("gone")) {
		if strings.Contains(p, "[hm:m-gone]") {
			t.Errorf("the removed pane's message was typed: %q", p)
		}
	}
}

// TestReloadInvalidChangesNothing: settings that do not load, or that the
// running hub cannot apply, change nothing: Reload returns why, the team
// and the panes stay as they were.
func TestReloadInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	good := reloadSettings("", [2]string{"keep", agentCmd(root, "keep")})
	th := startHubAt(t, root, hubConfig{settings: good})
	before := waitPIDs(t, th, "keep")
	team := th.h.Team()
	for _, tc := range []struct {
		name, settings, want string
	}{
		{"not JSON", `{"panes":[`, "parse settings"},
		{"reserved role", `{"panes":[{"role":"all","command":"x"}]}`, `pane role "all" is reserved`},
		{"unknown profile", `{"panes":[{"role":"keep","command":"x","profile":"nosuch"}]}`, `profile "nosuch"`},
		{"wrong type", `{"port":"x"}`, "parse settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeSettingsFile(t, th, tc.settings)
			_, err := th.h.Reload(ctxT(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reload: %v, want an error with %q", err, tc.want)
			}
			if th.h.Team() != team {
				t.Error("the team changed")
			}
			if pids := panePIDs(th); !samePIDs(pids, before) {
				t.Errorf("panes changed: %v, were %v", pids, before)
			}
		})
	}
}

func samePIDs(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestReloadEndpoint: POST /reload is the operator's alone (a pane's
// token: 401; a browser's Origin: 403), POST only, and answers invalid
// settings 422 with the error.
func TestReloadEndpoint(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
	url := "http://127.0.0.1:" + strconv.Itoa(th.h.Port) + "/reload"
	paneTok := th.h.Tokens.Issue("builder")
	for _, tc := range []struct {
		name, method, token, origin, settings string
		want                                  int
	}{
		{"operator", http.MethodPost, th.token(), "", "", http.StatusOK},
		{"pane token", http.MethodPost, paneTok, "", "", http.StatusUnauthorized},
		{"no token", http.MethodPost, "", "", "", http.StatusUnauthorized},
		{"browser", http.MethodPost, th.token(), "http://127.0.0.1", "", http.StatusForbidden},
		{"GET", http.MethodGet, th.token(), "", "", http.StatusMethodNotAllowed},
		{"invalid settings", http.MethodPost, th.token(), "", `{"port":"x"}`, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.settings != "" {
				writeSettingsFile(t, th, tc.settings)
				defer os.Remove(th.h.Layout.Settings())
			}
			req, err := http.NewRequestWithContext(ctxT(t), tc.method, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s /reload: %d, want %d", tc.method, resp.StatusCode, tc.want)
			}
		})
	}
}
