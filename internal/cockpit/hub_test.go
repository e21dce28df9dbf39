package cockpit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/promptlog"
	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// cockpitHub is a real hub for the cockpit tests: the architect runs the
// fake agent (logging its prompts to <root>/architect.jsonl) and the
// oracle a shell that prints its terminal's size ("ROWS COLS") on each
// SIGWINCH.
type cockpitHub struct {
	h     *hub.Hub
	root  string
	base  string // http://127.0.0.1:<port>
	token string // operator
}

func startCockpitHub(t *testing.T, tune ...func(*hub.Options)) *cockpitHub {
	t.Helper()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	arch := "FAKEAGENT_LOG=" + filepath.Join(root, "architect.jsonl") + " FAKEAGENT_ENTER_MS=60 " + fakeAgentBin(t)
	oracle := `sh -c 'trap "stty size" WINCH; echo oracle-up; while :; do sleep 0.05; done'`
	settings := fmt.Sprintf(`{"panes":[{"role":"architect","command":%q,"profile":"default"},{"role":"oracle","command":%q,"profile":"default"}]}`, arch, oracle)
	if err := os.WriteFile(lay.Settings(), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := hub.Options{StopGracePeriod: time.Second}
	for _, f := range tune {
		f(&opts)
	}
	h, _ := hubtest.Start(t, root, opts)
	tok, err := lay.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	return &cockpitHub{h: h, root: root, base: "http://127.0.0.1:" + strconv.Itoa(h.Port), token: tok}
}

// wsURL is the ws:// URL of a path on the hub.
func (ch *cockpitHub) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(ch.base, "http") + path
}

// dial opens a cockpit WebSocket with the session's cookie jar.
func dialCockpitWS(t *testing.T, c *http.Client, u string) *websocket.Conn {
	t.Helper()
	conn, resp, err := websocket.Dial(t.Context(), u, &websocket.DialOptions{HTTPClient: c})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", u, err, resp)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func writeWSJSON(t *testing.T, conn *websocket.Conn, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(t.Context(), websocket.MessageText, data); err != nil {
		t.Fatalf("write %s: %v", data, err)
	}
}

// readWSJSON reads JSON frames until one satisfies match, within 30 s.
func readWSJSON(t *testing.T, conn *websocket.Conn, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var f map[string]any
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		if match(f) {
			return f
		}
	}
}

func frameOfType(typ string) func(map[string]any) bool {
	return func(f map[string]any) bool { return f["type"] == typ }
}

// getAPI GETs a cockpit API path with the session and decodes the answer.
func getAPI(t *testing.T, c *http.Client, u string, v any) {
	t.Helper()
	resp, body := doReq(t, c, http.MethodGet, u, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s (%s) %s", u, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: decode %q: %v", u, body, err)
	}
}

// TestCockpitOnHub drives a real hub through the cockpit: the broker's
// protocol as the operator on /ui/ws, a pane on /ui/attach (output,
// typing, resize) and the JSON API.
func TestCockpitOnHub(t *testing.T) {
	t.Parallel()
	ch := startCockpitHub(t)
	c, _ := loginSession(t, ch.base, ch.token)

	// A pane token is not the operator's: no login code for it.
	if resp, body := doReq(t, noRedirectClient(t, nil), http.MethodPost, ch.base+"/ui/code", map[string]string{"Authorization": "Bearer " + ch.h.Tokens.Issue("oracle")}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST /ui/code with a pane token: %s %s", resp.Status, body)
	}

	t.Run("ws", func(t *testing.T) {
		ws := dialCockpitWS(t, c, ch.wsURL("/ui/ws"))
		readWSJSON(t, ws, "welcome", frameOfType("welcome"))
		writeWSJSON(t, ws, map[string]any{"type": "register", "role": "user", "listen": false})
		reg := readWSJSON(t, ws, "registered", func(f map[string]any) bool { return f["type"] == "registered" || f["type"] == "error" })
		if reg["type"] != "registered" || reg["role"] != "user" {
			t.Fatalf("register without a token: %v", reg)
		}
		writeWSJSON(t, ws, map[string]any{"type": "subscribe", "topics": []string{"journal"}})
		writeWSJSON(t, ws, map[string]any{"type": "send", "target": "architect", "content": "from the cockpit", "messageId": "m-cockpit-1", "priority": "urgent"})
		ack := readWSJSON(t, ws, "send-ack", frameOfType("send-ack"))
		if ack["ok"] != true || ack["messageId"] != "m-cockpit-1" || ack["header"] != "USER" {
			t.Fatalf("send-ack %v", ack)
		}
		ev := readWSJSON(t, ws, "journal-event", func(f map[string]any) bool {
			row, _ := f["row"].(map[string]any)
			return f["type"] == "journal-event" && row != nil && row["message_id"] == "m-cockpit-1"
		})
		if row := ev["row"].(map[string]any); row["sender_role"] != "user" || row["target_role"] != "architect" {
			t.Fatalf("journal-event row %v", row)
		}
		writeWSJSON(t, ws, map[string]any{"type": "query", "op": "get", "requestId": "q1", "payload": map[string]any{"messageIds": []string{"m-cockpit-1"}}})
		if r := readWSJSON(t, ws, "query response", func(f map[string]any) bool { return f["requestId"] == "q1" }); r["ok"] != true {
			t.Fatalf("query get: %v", r)
		}
		writeWSJSON(t, ws, map[string]any{"type": "health-check", "target": "architect", "requestId": "h1"})
		if r := readWSJSON(t, ws, "health", frameOfType("health-check-result")); r["target"] != "architect" {
			t.Fatalf("health-check-result %v", r)
		}
		// The fake agent receives the message.
		poll.For(t, 30*time.Second, func() error {
			ps, err := promptlog.Read(filepath.Join(ch.root, "architect.jsonl"))
			if err != nil {
				return err
			}
			for _, p := range ps {
				if strings.Contains(p.Full(), "from the cockpit") {
					return nil
				}
			}
			return fmt.Errorf("architect has not received the message: %v", ps)
		})
	})

	t.Run("attach", func(t *testing.T) {
		att := dialCockpitWS(t, c, ch.wsURL("/ui/attach/oracle?cols=80&rows=24"))
		screen := readPaneBytes(t, att, "the shell's output", func(s string) bool { return strings.Contains(s, "oracle-up") })
		if strings.Contains(screen, "31 101") {
			t.Fatalf("the pane printed the new size before the resize: %q", screen)
		}
		writeWSJSON(t, att, map[string]any{"type": "resize", "cols": 101, "rows": 31})
		readPaneBytes(t, att, "the shell's stty size after the resize", func(s string) bool { return strings.Contains(s, "31 101") })

		// Typing reaches the program: the fake agent logs the prompt.
		arch := dialCockpitWS(t, c, ch.wsURL("/ui/attach/architect?cols=80&rows=24"))
		readPaneBytes(t, arch, "the architect's first frame", func(string) bool { return true })
		if err := arch.Write(t.Context(), websocket.MessageBinary, []byte("typed in the cockpit")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // past FAKEAGENT_ENTER_MS, so Enter submits
		if err := arch.Write(t.Context(), websocket.MessageBinary, []byte("\r")); err != nil {
			t.Fatal(err)
		}
		poll.For(t, 30*time.Second, func() error {
			ps, err := promptlog.Read(filepath.Join(ch.root, "architect.jsonl"))
			if err != nil {
				return err
			}
			for _, p := range ps {
				if strings.Contains(p.Prompt, "typed in the cockpit") {
					return nil
				}
			}
			return fmt.Errorf("the architect has no prompt typed in the cockpit: %v", ps)
		})

		// Unknown pane: 404 before the upgrade.
		_, resp, err := websocket.Dial(t.Context(), ch.wsURL("/ui/attach/nobody"), &websocket.DialOptions{HTTPClient: c})
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("attach to an unknown pane: %v %v", err, resp)
		}
	})

	t.Run("api", func(t *testing.T) {
		var st hub.Status
		getAPI(t, c, ch.base+"/ui/api/status", &st)
		roles := map[string]bool{}
		for _, p := range st.Panes {
			roles[p.Role] = p.PID > 0
		}
		if st.Hub.Port != ch.h.Port || !roles["architect"] || !roles["oracle"] {
			t.Fatalf("status %+v", st)
		}
		var ho struct{ Path, Markdown string }
		getAPI(t, c, ch.base+"/ui/api/handoff", &ho)
		if !strings.HasPrefix(ho.Path, filepath.Join(ch.root, ".squidrun", "handoffs")) || !strings.HasPrefix(ho.Markdown, "#") {
			t.Fatalf("handoff %q %.200q", ho.Path, ho.Markdown)
		}
		var v struct {
			OK        bool   `json:"ok"`
			Rows      int64  `json:"rows"`
			Problem   string `json:"problem"`
			MessageID string `json:"messageId"`
			ChainOK   *bool  `json:"chainOk"`
			Events    []struct {
				Event  string          `json:"event"`
				At     int64           `json:"at"`
				Detail json.RawMessage `json:"detail"`
				Hash   string          `json:"hash"`
			} `json:"events"`
		}
		getAPI(t, c, ch.base+"/ui/api/verify", &v)
		if !v.OK || v.Rows == 0 || v.Problem != "" || v.ChainOK != nil || v.Events != nil {
			t.Fatalf("verify %+v", v)
		}
		getAPI(t, c, ch.base+"/ui/api/verify?id=m-cockpit-1", &v)
		if !v.OK || v.MessageID != "m-cockpit-1" || v.ChainOK == nil || !*v.ChainOK || len(v.Events) == 0 || v.Events[0].Event != "brokered" ||
			len(v.Events[0].Hash) != 64 || v.Events[0].At == 0 || len(v.Events[0].Detail) == 0 {
			t.Fatalf("verify ?id %+v", v)
		}
		for q, want := range map[string]int{"?id=nope-unknown": http.StatusNotFound, "?id=../x": http.StatusBadRequest, "?id=": http.StatusBadRequest} {
			if resp, body := doReq(t, c, http.MethodGet, ch.base+"/ui/api/verify"+q, nil); resp.StatusCode != want || !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("verify%s: %s %s, want %d", q, resp.Status, body, want)
			}
		}
	})
}

// readPaneBytes reads attach frames, collecting the terminal bytes, until what
// was read satisfies done (within 30 s); it returns what was read.
func readPaneBytes(t *testing.T, conn *websocket.Conn, what string, done func(string) bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got strings.Builder
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v; read %q", what, err, got.String())
		}
		if typ == websocket.MessageBinary {
			got.Write(data)
			if done(got.String()) {
				return got.String()
			}
		}
	}
}

// TestVerifyShowsTampering: after a message's event is changed in the
// ledger file, /ui/api/verify says the ledger does not verify and the
// message's chain links do not hold; another message's links still do.
func TestVerifyShowsTampering(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	tok, err := layout.Layout{Root: root}.ReadToken()
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(h.Port)
	c, _ := loginSession(t, base, tok)
	ws := dialCockpitWS(t, c, "ws"+strings.TrimPrefix(base, "http")+"/ui/ws")
	writeWSJSON(t, ws, map[string]any{"type": "register", "role": "user"})
	readWSJSON(t, ws, "registered", frameOfType("registered"))
	for _, id := range []string{"m-good", "m-bad"} {
		writeWSJSON(t, ws, map[string]any{"type": "send", "target": "architect", "content": "body of " + id, "messageId": id})
		if ack := readWSJSON(t, ws, "send-ack", frameOfType("send-ack")); ack["ok"] != true {
			t.Fatalf("send %s: %v", id, ack)
		}
	}
	type verify struct {
		OK      bool   `json:"ok"`
		Problem string `json:"problem"`
		ChainOK *bool  `json:"chainOk"`
	}
	var before verify
	getAPI(t, c, base+"/ui/api/verify?id=m-bad", &before)
	if !before.OK || before.ChainOK == nil || !*before.ChainOK {
		t.Fatalf("before tampering: %+v", before)
	}

	conn, err := sqlite.OpenConn(h.Ledger.Path(), sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetBusyTimeout(10 * time.Second)
	err = sqlitex.ExecuteTransient(conn, "UPDATE comms_events SET prev_hash = ? WHERE event_id = (SELECT min(event_id) FROM comms_events WHERE message_id = 'm-bad')",
		&sqlitex.ExecOptions{Args: []any{strings.Repeat("f", 64)}})
	conn.Close()
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}

	var bad, good verify
	getAPI(t, c, base+"/ui/api/verify?id=m-bad", &bad)
	if bad.OK || bad.Problem == "" || bad.ChainOK == nil || *bad.ChainOK {
		t.Fatalf("tampered message: %+v", bad)
	}
	getAPI(t, c, base+"/ui/api/verify?id=m-good", &good)
	if good.OK || good.ChainOK == nil || !*good.ChainOK {
		t.Fatalf("untouched message after tampering with another: %+v", good)
	}
}
