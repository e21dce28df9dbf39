// Package model is a scripted language model for tests: one HTTP server on
// loopback that speaks, streamed, the three wire protocols the agent CLIs
// use (Anthropic Messages for Claude Code, OpenAI Responses for Codex CLI,
// Gemini's generateContent for Gemini CLI). It records every request,
// parsed down to what the turn brings that is new, and answers by a script:
// a text after a delay, or a shell tool call and then a text.
//
// Each CLI is pointed at its own path prefix (http://127.0.0.1:PORT/<p>),
// so one server serves many panes and keeps their requests apart.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// API is a wire protocol.
type API string

// The protocols served.
const (
	Anthropic API = "anthropic" // POST <p>/v1/messages
	OpenAI    API = "openai"    // POST <p>/v1/responses
	Gemini    API = "gemini"    // POST <p>/v1beta/models/<m>:streamGenerateContent
)

// Request is one recorded request, parsed.
type Request struct {
	Seq    int       // order of arrival, from 1, over the whole server
	Prefix string    // the path prefix: which client sent it
	API    API       // the protocol
	Path   string    // the request path
	At     time.Time // when it arrived
	// Main: a turn of the agent (the request offers tools); false for a
	// side request (a title, a token count, a classifier).
	Main bool
	// Texts are the text parts the turn adds, one entry per part, in
	// order: for a main turn, the user (or developer) texts of the
	// conversation that the previous main turn of the same client did not
	// hold (so a prompt whose turn was cut off before the model answered
	// is not counted again with the next one); for a side request, those
	// after the model's last output. The strings of a tool's result count
	// as texts (a hook may add context there). A prompt typed at the CLI
	// is one of them; hook context and the CLI's own reminders may be
	// others.
	Texts []string
	// Turn are the texts after the model's last output: what the turn
	// itself brings, without the history before it. A main turn's Texts
	// can also hold history the previous main turn lacked: Gemini CLI,
	// resumed, sent one turn without the conversation and the next with
	// it (see sightings).
	Turn []string
	// SystemTexts are the texts of the conversation's system-role
	// messages (Anthropic): Claude Code sends a hook's context there, the
	// first time alone (UserPromptSubmit after a restart) and later again
	// beside the user message that already carried it. See sightings.
	SystemTexts []string
	// ToolResult: the turn adds the result of a tool the model called.
	ToolResult bool
	// Tools are the names of the tools offered.
	Tools []string
	// Body is the request's body as received.
	Body []byte

	all []string // every user text (and tool result) of the conversation, in order
}

// New is Texts joined by newlines.
func (r Request) New() string { return strings.Join(r.Texts, "\n") }

// Reply is the script's answer to a request.
type Reply struct {
	// Delay is how long to wait before answering (the model "thinks");
	// a client that hangs up meanwhile (the CLI was interrupted) gets
	// nothing.
	Delay time.Duration
	// Shell, when set, is a command the model asks to run with the CLI's
	// shell tool (Bash, exec_command, run_shell_command); the text comes
	// with the turn that carries its result.
	Shell string
	// Text is the answer's text (default "ok").
	Text string
}

// Script decides the reply to a request. It is called once per request,
// concurrently for requests of different clients.
type Script func(Request) Reply

// Server is the scripted model.
type Server struct {
	log    *slog.Logger
	script Script
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}

	mu   sync.Mutex
	reqs []Request
	seq  int
	// after holds, by prefix, the text of a reply whose shell call is
	// out: the turn carrying the tool's result gets it.
	after map[string]string
	// seen holds, by prefix, the user texts of the last main turn.
	seen map[string][]string
}

// Start serves on 127.0.0.1:0 until ctx ends or Close is called. A nil
// script answers every request "ok" at once.
func Start(ctx context.Context, log *slog.Logger, script Script) (*Server, error) {
	if script == nil {
		script = func(Request) Reply { return Reply{} }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model: listen: %w", err)
	}
	s := &Server{log: log, script: script, ln: ln, done: make(chan struct{}), after: map[string]string{}, seen: map[string][]string{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("model: serve", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// URL is the base URL for a client using prefix ("claude-1"):
// http://127.0.0.1:PORT/claude-1.
func (s *Server) URL(prefix string) string {
	return "http://" + s.ln.Addr().String() + "/" + strings.Trim(prefix, "/")
}

// Close stops the server, ending every request in flight, and waits.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// Requests returns the recorded requests of prefix ("" for all), in order.
func (s *Server) Requests(prefix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if prefix == "" || r.Prefix == prefix {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) record(r Request) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r.Seq = s.seq
	r.Turn = r.Texts
	if r.Main {
		r.Texts = subtract(r.all, s.seen[r.Prefix])
		s.seen[r.Prefix] = r.all
	}
	s.reqs = append(s.reqs, r)
	return r
}

// route splits a path into its prefix and the API path after it.
func route(path string) (prefix, rest string, api API, ok bool) {
	for _, m := range []struct {
		mark string
		api  API
	}{{"/v1/messages", Anthropic}, {"/v1/responses", OpenAI}, {"/v1beta/models/", Gemini}} {
		if i := strings.Index(path, m.mark); i >= 0 {
			return strings.Trim(path[:i], "/"), path[i:], m.api, true
		}
	}
	return "", "", "", false
}

// maxBody bounds a request body (a long conversation stays far below).
const maxBody = 64 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	prefix, rest, api, ok := route(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		s.log.Debug("model: not served", "method", r.Method, "path", r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Prefix: prefix, API: api, Path: r.URL.Path, At: time.Now(), Body: body}
	switch api {
	case Anthropic:
		s.anthropic(w, r, rest, req)
	case OpenAI:
		s.openai(w, r, req)
	case Gemini:
		s.gemini(w, r, rest, req)
	}
}

// answer records req, asks the script and waits its delay; false when the
// client went away meanwhile.
func (s *Server) answer(ctx context.Context, req *Request) (Reply, bool) {
	*req = s.record(*req)
	rep, ok := s.followUp(*req)
	if !ok {
		rep = s.script(*req)
	}
	if rep.Text == "" {
		rep.Text = "ok"
	}
	if rep.Shell != "" && !req.ToolResult {
		s.mu.Lock()
		s.after[req.Prefix] = rep.Text
		s.mu.Unlock()
	}
	s.log.Debug("model: request", "seq", req.Seq, "prefix", req.Prefix, "api", req.API, "main", req.Main,
		"tool_result", req.ToolResult, "new", clip(req.New(), 200), "delay", rep.Delay, "shell", rep.Shell)
	if rep.Delay <= 0 {
		return rep, ctx.Err() == nil
	}
	t := time.NewTimer(rep.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return rep, true
	case <-ctx.Done():
		return rep, false
	}
}

// subtract returns the texts of all, in order, less one occurrence of
// each text of old.
func subtract(all, old []string) []string {
	// Texts are compared without their surrounding blanks: Claude Code
	// sends an earlier turn's text again with a newline added once the
	// turn after it was interrupted.
	left := map[string]int{}
	for _, t := range old {
		left[strings.TrimSpace(t)]++
	}
	var out []string
	for _, t := range all {
		if k := strings.TrimSpace(t); left[k] > 0 {
			left[k]--
			continue
		}
		out = append(out, t)
	}
	return out
}

// followUp is the reply to a turn carrying a tool's result after a
// scripted shell call: that reply's text.
func (s *Server) followUp(req Request) (Reply, bool) {
	if !req.ToolResult {
		return Reply{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.after[req.Prefix]
	delete(s.after, req.Prefix)
	return Reply{Text: text}, ok
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// badRequest answers a body that does not parse.
func badRequest(w http.ResponseWriter, api API, err error) {
	http.Error(w, fmt.Sprintf("model (%s): %v", api, err), http.StatusBadRequest)
}

// sse writes server-sent events and flushes each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return sse{w: w, f: f}
}

// event writes one event: "event: <name>" when name is set, and data as
// JSON.
func (e sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// textOf returns the text of a content that is a string or an array of
// parts with a "text" field (the shape all three protocols share).
func textOf(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// jsonStrings returns the string values in raw JSON, in order (a tool's
// result, where a hook may have added context).
func jsonStrings(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if x != "" {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// words splits a text into chunks of about n bytes (on rune boundaries),
// for streaming deltas.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i < len(s) && !utf8Start(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
