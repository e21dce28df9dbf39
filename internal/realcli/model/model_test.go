package model

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, script Script) *Server {
	t.Helper()
	s, err := Start(context.Background(), slog.New(slog.DiscardHandler), script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// TestProtocols: each protocol's turn is parsed down to its new user
// content (what follows the model's last output), a main turn told from a
// side request by its tools, and answered, streamed, with a text or, when
// the script says so, a call of the CLI's shell tool; the turn carrying
// the tool's result gets the text.
func TestProtocols(t *testing.T) {
	s := start(t, func(r Request) Reply {
		if strings.Contains(r.New(), "run it") {
			return Reply{Shell: "hm-send architect done", Text: "ran"}
		}
		return Reply{Text: "hello back"}
	})
	for _, tc := range []struct {
		name, path, body string
		main, toolResult bool
		texts            []string
		want             []string // substrings of the answer, in order
	}{
		{"anthropic text", "/c/v1/messages?beta=true",
			`{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"old"},{"role":"assistant","content":"x"},
			 {"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"hi ✓"}]}]}`,
			true, false, []string{"old", "<system-reminder>r</system-reminder>", "hi ✓"},
			[]string{"event: message_start", "content_block_start", `"text":"hello back","type":"text_delta"`, `"stop_reason":"end_turn"`, "event: message_stop"}},
		{"anthropic tool call", "/c/v1/messages", `{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"run it"}]}`,
			true, false, []string{"run it"},
			[]string{`"name":"Bash","type":"tool_use"`, `hm-send architect done`, `input_json_delta`, `"stop_reason":"tool_use"`}},
		{"anthropic tool result", "/c/v1/messages", `{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"run it"},
			 {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]}]}`,
			true, true, []string{"out"}, []string{`"text":"ran"`, "end_turn"}},
		{"anthropic side request", "/c/v1/messages", `{"messages":[{"role":"user","content":"title for: hi"}]}`,
			false, false, []string{"title for: hi"}, []string{`"text":"hello back"`, `"type":"message"`}},
		{"openai text", "/x/v1/responses", `{"stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[
			 {"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},
			 {"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`,
			true, false, []string{"dev", "hi"},
			[]string{"response.created", "response.output_item.added", `"delta":"hello back"`, "response.output_item.done", "response.completed", `"usage"`}},
		{"openai tool call", "/x/v1/responses", `{"stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[{"role":"user","content":"run it"}]}`,
			true, false, []string{"run it"}, []string{`"arguments":"{\"cmd\":\"hm-send architect done\"}"`, `"name":"exec_command"`, `"type":"function_call"`, "response.completed"}},
		{"openai tool result", "/x/v1/responses", `{"stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[{"role":"user","content":"run it"},
			 {"type":"function_call","call_id":"c","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"out"}]}`,
			true, true, []string{"out"}, []string{`"delta":"ran"`}},
		{"gemini text", "/g/v1beta/models/m:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"contents":[
			 {"role":"user","parts":[{"text":"old"}]},{"role":"model","parts":[{"text":"a"}]},{"role":"user","parts":[{"text":"hi"}]}]}`,
			true, false, []string{"old", "hi"}, []string{`data: {"candidates"`, `"text":"hello back"`, `"finishReason":"STOP"`, "usageMetadata"}},
		{"gemini tool call", "/g/v1beta/models/m:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"contents":[{"role":"user","parts":[{"text":"run it"}]}]}`,
			true, false, []string{"run it"}, []string{`"functionCall":{"args":{"command":"hm-send architect done"`, `"name":"run_shell_command"`}},
		{"gemini tool result", "/g/v1beta/models/m:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"contents":[{"role":"user","parts":[{"text":"run it"}]},
			 {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"out"}}}]}]}`,
			true, true, []string{"out"}, []string{`"text":"ran"`}},
		// Gemini CLI's resumed history can answer one call twice in one
		// turn: one result.
		{"gemini tool result twice", "/h/v1beta/models/m:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"contents":[{"role":"user","parts":[{"text":"run it"}]},
			 {"role":"model","parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"out"}}},{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"out"}}}]}]}`,
			true, true, []string{"run it", "out"}, []string{`"text":"ran"`}},
		{"gemini side request", "/g/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"classify"}]}]}`,
			false, false, []string{"classify"}, []string{`"candidates"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(s.Requests(""))
			got := post(t, s.URL("")+tc.path, tc.body)
			at := 0
			for _, w := range tc.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("answer lacks %q after offset %d:\n%s", w, at, got)
				}
				at += i + len(w)
			}
			rs := s.Requests("")
			if len(rs) != n+1 {
				t.Fatalf("%d requests recorded, want %d", len(rs), n+1)
			}
			r := rs[n]
			if r.Main != tc.main || r.ToolResult != tc.toolResult || strings.Join(r.Texts, "|") != strings.Join(tc.texts, "|") {
				t.Errorf("parsed main=%v toolResult=%v texts=%q, want %v %v %q", r.Main, r.ToolResult, r.Texts, tc.main, tc.toolResult, tc.texts)
			}
		})
	}
}

// TestNewTexts: a main turn's new texts are those the previous main turn
// of the same client did not hold, so a prompt whose turn was cut off
// before the model answered (Esc) is not counted again with the next
// prompt, and two prompts merged into one are seen as one new text.
func TestNewTexts(t *testing.T) {
	s := start(t, nil)
	turn := func(prefix string, msgs ...string) []string {
		var b strings.Builder
		for i, m := range msgs {
			role := "user"
			if strings.HasPrefix(m, "model:") {
				role, m = "assistant", strings.TrimPrefix(m, "model:")
			}
			if strings.HasPrefix(m, "system:") {
				role, m = "system", strings.TrimPrefix(m, "system:")
			}
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"role":"` + role + `","content":"` + m + `"}`)
		}
		post(t, s.URL(prefix)+"/v1/messages", `{"stream":true,"tools":[{"name":"Bash"}],"messages":[`+b.String()+`]}`)
		rs := s.Requests(prefix)
		return rs[len(rs)-1].Texts
	}
	for _, tc := range []struct {
		prefix string
		msgs   []string
		want   []string
	}{
		{"a", []string{"A"}, []string{"A"}},
		{"a", []string{"A", "B"}, []string{"B"}},                 // A's turn was cut off
		{"a", []string{"A", "B", "model:x", "C"}, []string{"C"}}, // answered
		{"a", []string{"A", "B", "model:x", "C", "C D"}, []string{"C D"}},
		{"b", []string{"A"}, []string{"A"}}, // another client
		// Claude Code sends an interrupted turn's earlier text again
		// with a newline added: history, not new content.
		{"c", []string{"A", "model:x", "B"}, []string{"A", "B"}},
		{"c", []string{"A", "model:x", "B\\n", "C"}, []string{"C"}},
		// and hook context as a system message: SystemTexts, not Texts.
		{"d", []string{"A", "system:ctx"}, []string{"A"}},
	} {
		if got := turn(tc.prefix, tc.msgs...); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s %q: new texts %q, want %q", tc.prefix, tc.msgs, got, tc.want)
		}
	}
}

// TestPrefixes: each client's requests are kept apart by the path prefix;
// token counts are answered and recorded as side requests.
func TestPrefixes(t *testing.T) {
	s := start(t, nil)
	post(t, s.URL("claude-a")+"/v1/messages", `{"messages":[{"role":"user","content":"a"}]}`)
	post(t, s.URL("claude-b")+"/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"b"}]}`)
	post(t, s.URL("gem")+"/v1beta/models/m:countTokens", `{"contents":[]}`)
	for _, tc := range []struct {
		prefix string
		n      int
	}{{"claude-a", 1}, {"claude-b", 1}, {"gem", 1}, {"", 3}, {"none", 0}} {
		rs := s.Requests(tc.prefix)
		if len(rs) != tc.n {
			t.Errorf("Requests(%q): %d, want %d", tc.prefix, len(rs), tc.n)
		}
		for _, r := range rs {
			if tc.prefix != "" && (r.Prefix != tc.prefix || r.Main) {
				t.Errorf("Requests(%q) holds %+v", tc.prefix, r)
			}
		}
	}
	resp, err := http.Get(s.URL("x") + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET: %s, want 404", resp.Status)
	}
}

// TestHangUpDuringDelay: a client that hangs up while the model "thinks"
// (the CLI was interrupted) was recorded, and the delay ends with it.
func TestHangUpDuringDelay(t *testing.T) {
	s := start(t, func(Request) Reply { return Reply{Delay: time.Hour} })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL("c")+"/v1/messages",
		strings.NewReader(`{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"slow"}]}`))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.Requests("c")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request was never recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the hung-up request got an answer")
	}
	s.Close() // returns only once the handler ended
}
