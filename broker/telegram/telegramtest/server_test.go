package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const token = "1:tok"

type answer struct {
	status int
	body   map[string]any
	raw    string
}

func call(t *testing.T, s *Server, tok, method string, params map[string]any) answer {
	t.Helper()
	a, err := tryCall(s, tok, method, params)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tryCall is call without failing the test, for use in goroutines.
func tryCall(s *Server, tok, method string, params map[string]any) (answer, error) {
	body, _ := json.Marshal(params)
	req, err := http.NewRequest(http.MethodPost, s.URL+"/bot"+tok+"/"+method, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	return tryDo(req)
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	a, err := tryDo(req)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func tryDo(req *http.Request) (answer, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(data)}
	_ = json.Unmarshal(data, &a.body)
	return a, nil
}

func newServer(t *testing.T) *Server {
	t.Helper()
	s := NewServer(token)
	t.Cleanup(func() {
		// Idle keep-alive connections would hold goroutines past the run,
		// which TestMain's leak check reports.
		s.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

func results(t *testing.T, a answer) []map[string]any {
	t.Helper()
	if a.status != 200 || a.body["ok"] != true {
		t.Fatalf("answer %d %s", a.status, a.raw)
	}
	raw, _ := json.Marshal(a.body["result"])
	var out []map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("result is not a list: %s", a.raw)
	}
	return out
}

func TestGetMeAndToken(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	tests := []struct {
		tok, method string
		status      int
	}{
		{token, "getMe", 200},
		{token, "GETME", 200},
		{"2:other", "getMe", 401},
		{"2:other", "getUpdates", 401},
		{token, "noSuchMethod", 404},
	}
	for _, tt := range tests {
		a := call(t, s, tt.tok, tt.method, nil)
		if a.status != tt.status {
			t.Errorf("%s with %s: status %d, want %d (%s)", tt.method, tt.tok, a.status, tt.status, a.raw)
		}
		if tt.status != 200 && (a.body["ok"] != false || a.body["error_code"] != float64(tt.status)) {
			t.Errorf("%s: error body %s", tt.method, a.raw)
		}
	}
	if s.Calls("getMe") != 3 {
		t.Errorf("getMe calls = %d, want 3", s.Calls("getMe"))
	}
}

func TestGetUpdatesOffsets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	id1 := s.Enqueue(Message{ChatID: 42, Text: "one"})
	id2 := s.Enqueue(Message{ChatID: 42, Text: "two", Edited: true})
	id3 := s.EnqueueRaw("poll", map[string]any{"id": "p"})
	if id1 != FirstUpdateID || id2 != id1+1 || id3 != id2+1 {
		t.Fatalf("ids %d %d %d", id1, id2, id3)
	}
	ups := results(t, call(t, s, token, "getUpdates", map[string]any{"timeout": 0}))
	if len(ups) != 3 || ups[0]["message"] == nil || ups[1]["edited_message"] == nil || ups[2]["poll"] == nil {
		t.Fatalf("updates = %v", ups)
	}
	// No offset: nothing confirmed.
	if s.Pending() != 3 {
		t.Fatalf("pending = %d", s.Pending())
	}
	ups = results(t, call(t, s, token, "getUpdates", map[string]any{"offset": id2, "limit": 1}))
	if len(ups) != 1 || ups[0]["update_id"] != float64(id2) {
		t.Fatalf("offset+limit gave %v", ups)
	}
	if s.Pending() != 2 || s.Offset() != id2 {
		t.Fatalf("pending %d offset %d after confirming %d", s.Pending(), s.Offset(), id1)
	}
	results(t, call(t, s, token, "getUpdates", map[string]any{"offset": id3 + 1}))
	if s.Pending() != 0 {
		t.Fatalf("pending = %d after confirming all", s.Pending())
	}

	s.RetainConfirmed(true)
	id4 := s.Enqueue(Message{ChatID: 42, Text: "four"})
	results(t, call(t, s, token, "getUpdates", map[string]any{"offset": id4 + 1}))
	if ups := results(t, call(t, s, token, "getUpdates", map[string]any{"offset": id4})); len(ups) != 1 {
		t.Fatalf("retained update not offered again: %v", ups)
	}
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	// Times out empty.
	start := time.Now()
	if ups := results(t, call(t, s, token, "getUpdates", map[string]any{"timeout": 1})); len(ups) != 0 {
		t.Fatalf("updates = %v", ups)
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("empty long poll returned after %v", el)
	}
	// Wakes up on enqueue.
	got := make(chan answer, 1)
	go func() { a, _ := tryCall(s, token, "getUpdates", map[string]any{"timeout": 30}); got <- a }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Calls("getUpdates") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	s.Enqueue(Message{ChatID: 42, Text: "wake"})
	select {
	case a := <-got:
		if ups := results(t, a); len(ups) != 1 {
			t.Fatalf("updates = %v", ups)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake up")
	}
	// Close ends a pending long poll.
	go func() {
		a, _ := tryCall(s, token, "getUpdates", map[string]any{"timeout": 30, "offset": 1 << 40})
		got <- a
	}()
	for s.Calls("getUpdates") < 3 && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked by a long poll")
	}
	if a := <-got; a.status == 200 {
		t.Fatalf("long poll pending at Close answered %d %s", a.status, a.raw)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      Fault
		status     int
		retryAfter float64
		malformed  bool
		minDelay   time.Duration
	}{
		{"429", RateLimited(7), 429, 7, false, 0},
		{"500", ServerError(), 500, 0, false, 0},
		{"502", BadGateway(), 502, 0, false, 0},
		{"403", Forbidden(), 403, 0, false, 0},
		{"401", Unauthorized(), 401, 0, false, 0},
		{"malformed", Malformed(), 200, 0, true, 0},
		{"slow", Slow(200 * time.Millisecond), 200, 0, false, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			s.Inject("sendMessage", 1, tt.fault)
			start := time.Now()
			a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 42, "text": "x"})
			if time.Since(start) < tt.minDelay {
				t.Fatalf("answered after %v", time.Since(start))
			}
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.raw)
			}
			if tt.malformed {
				if json.Valid([]byte(a.raw)) {
					t.Fatalf("malformed answer is valid JSON: %s", a.raw)
				}
			} else if tt.status != 200 {
				params, _ := a.body["parameters"].(map[string]any)
				if tt.retryAfter > 0 && params["retry_after"] != tt.retryAfter {
					t.Fatalf("retry_after missing: %s", a.raw)
				}
				if a.body["description"] == "" {
					t.Fatalf("no description: %s", a.raw)
				}
			}
			wantSent := 0
			if tt.status == 200 && !tt.malformed {
				wantSent = 1
			}
			if len(s.Sent()) != wantSent {
				t.Fatalf("sent = %v", s.Sent())
			}
			// The fault is used up.
			if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 42, "text": "y"}); a.status != 200 {
				t.Fatalf("second call status %d", a.status)
			}
		})
	}
}

func TestSendMessageEncodings(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	// JSON
	call(t, s, token, "sendMessage", map[string]any{"chat_id": "@chan", "text": "json"})
	// form
	form := url.Values{"chat_id": {"42"}, "text": {"form"}}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/bot"+token+"/sendMessage", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	do(t, req)
	// multipart
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("chat_id", "-100")
	_ = mw.WriteField("text", "multipart")
	_ = mw.Close()
	req, _ = http.NewRequest(http.MethodPost, s.URL+"/bot"+token+"/sendMessage", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	do(t, req)
	// query string
	req, _ = http.NewRequest(http.MethodGet, s.URL+"/bot"+token+"/sendMessage?chat_id=7&text=query", nil)
	do(t, req)

	want := []Sent{{ChatID: "@chan", Text: "json"}, {ChatID: "42", Text: "form"}, {ChatID: "-100", Text: "multipart"}, {ChatID: "7", Text: "query"}}
	sent := s.Sent()
	if len(sent) != len(want) {
		t.Fatalf("sent = %+v", sent)
	}
	for i := range want {
		if sent[i].ChatID != want[i].ChatID || sent[i].Text != want[i].Text || sent[i].MessageID == 0 {
			t.Errorf("sent[%d] = %+v, want %+v", i, sent[i], want[i])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := s.WaitSent(ctx, 4); err != nil || len(got) != 4 {
		t.Fatalf("WaitSent = %d, %v", len(got), err)
	}
	if p := s.Params("sendMessage"); len(p) != 4 || p[1]["text"] != "form" {
		t.Fatalf("params = %v", p)
	}
}

func TestSendMessageValidation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	tests := []struct {
		name   string
		params map[string]any
		status int
	}{
		{"ok at the limit", map[string]any{"chat_id": 1, "text": strings.Repeat("a", MaxTextLen)}, 200},
		{"astral runes count two", map[string]any{"chat_id": 1, "text": strings.Repeat("😀", MaxTextLen/2+1)}, 400},
		{"too long", map[string]any{"chat_id": 1, "text": strings.Repeat("a", MaxTextLen+1)}, 400},
		{"empty", map[string]any{"chat_id": 1, "text": " \n"}, 400},
		{"no chat", map[string]any{"text": "x"}, 400},
	}
	for _, tt := range tests {
		if a := call(t, s, token, "sendMessage", tt.params); a.status != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, a.status, tt.status, a.raw)
		}
	}
}

// FuzzReadParams: any body and content type is answered without a panic.
func FuzzReadParams(f *testing.F) {
	f.Add("application/json", `{"chat_id":1,"text":"x"}`)
	f.Add("multipart/form-data; boundary=xx", "--xx\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n--xx--\r\n")
	f.Add("application/x-www-form-urlencoded", "a=%zz")
	f.Add("text/plain", "x")
	f.Fuzz(func(t *testing.T, ct, body string) {
		req, err := http.NewRequest(http.MethodPost, "http://x/bot1:t/sendMessage", strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		req.Header.Set("Content-Type", ct)
		p, _ := readParams(req)
		if p == nil {
			t.Fatal("nil params map")
		}
	})
}
