// Package telegramtest is a fake Telegram Bot API server for tests: getMe,
// getUpdates with real long-poll and offset semantics, and sendMessage, with
// failure injection (429 with retry_after, 5xx, 403, 401, slow and malformed
// answers) and helpers to enqueue updates of every kind the relay handles.
//
// Requests go to <URL>/bot<token>/<method>, with parameters in the query
// string, a JSON body, a url-encoded form or a multipart form, like the real
// API. A token other than the server's gets 401 Unauthorized.
package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
)

// FirstUpdateID is the id of the first enqueued update.
const FirstUpdateID = 700000

// MaxTextLen is the longest text sendMessage accepts, in UTF-16 code units.
const MaxTextLen = 4096

// maxPollTimeout caps a getUpdates timeout, as Telegram does.
const maxPollTimeout = 50 * time.Second

// Bot describes the fake bot returned by getMe.
var Bot = struct {
	ID        int64
	FirstName string
	Username  string
}{ID: 424242, FirstName: "hm test bot", Username: "hm_test_bot"}

// Fault is an injected answer for one call of a method.
type Fault struct {
	Status      int           // HTTP status and error_code of the answer; 0 answers normally
	RetryAfter  int           // parameters.retry_after (seconds), for 429
	Description string        // the error description; a default per status when empty
	Delay       time.Duration // wait before answering (ends early if the client gives up)
	Malformed   bool          // answer 200 with a body that is not JSON
}

// RateLimited is a 429 asking to retry after the given seconds.
func RateLimited(retryAfter int) Fault {
	return Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// ServerError is a 500.
func ServerError() Fault { return Fault{Status: http.StatusInternalServerError} }

// BadGateway is a 502.
func BadGateway() Fault { return Fault{Status: http.StatusBadGateway} }

// Forbidden is the 403 Telegram sends when the user blocked the bot.
func Forbidden() Fault {
	return Fault{Status: http.StatusForbidden, Description: "Forbidden: bot was blocked by the user"}
}

// Unauthorized is the 401 of a revoked token.
func Unauthorized() Fault { return Fault{Status: http.StatusUnauthorized} }

// Slow delays the answer by d.
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// Malformed answers 200 with a body that is not JSON.
func Malformed() Fault { return Fault{Malformed: true} }

// Sent is a message received by sendMessage.
type Sent struct {
	ChatID    string // as the client sent it
	Text      string
	MessageID int
	At        time.Time
}

// Message describes an inbound message to enqueue with [Server.Enqueue].
type Message struct {
	ChatID    int64  // required
	ChatType  string // default "private"
	ChatTitle string // for groups and channels
	ChatUser  string // the chat's @username, without "@"
	FromID    int64  // default: ChatID
	FromName  string // first name of the sender; default "Alice"
	Username  string // sender's username
	Text      string
	Caption   string
	Photo     bool   // attach a photo
	Document  string // attach a document with this file name
	Voice     bool   // attach a voice note
	Sticker   bool   // attach a sticker
	Emoji     string // the sticker's emoji
	Edited    bool   // deliver as edited_message
	Date      time.Time
	EditDate  time.Time
}

// Server is a fake Bot API server. Create it with [NewServer]; Close it.
type Server struct {
	// URL is the API base URL, to be used as TELEGRAM_API_URL.
	URL string
	// Token is the only bot token the server accepts.
	Token string

	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	mu        sync.Mutex
	nextID    int64
	nextMsgID int
	queue     []queued
	retainAll bool
	offset    int64 // highest offset a client confirmed
	changed   chan struct{}
	sent      []Sent
	calls     map[string]int
	params    map[string][]map[string]string
	faults    map[string][]Fault
}

type queued struct {
	id  int64
	raw json.RawMessage
}

// NewServer starts a fake Bot API accepting token.
func NewServer(token string) *Server {
	s := &Server{
		Token:     token,
		done:      make(chan struct{}),
		nextID:    FirstUpdateID,
		nextMsgID: 1,
		changed:   make(chan struct{}),
		calls:     map[string]int{},
		params:    map[string][]map[string]string{},
		faults:    map[string][]Fault{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server, ending pending long polls.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Inject makes the next n calls of method (e.g. "sendMessage") answer with f.
// Faults queue up in the order injected.
func (s *Server) Inject(method string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	for range n {
		s.faults[key] = append(s.faults[key], f)
	}
}

// RetainConfirmed, when on, makes the server keep updates a client confirmed,
// as if the confirmation were lost: only the offset of each request then
// decides what a client gets. It lets tests check that a client persists its
// own offset.
func (s *Server) RetainConfirmed(on bool) {
	s.mu.Lock()
	s.retainAll = on
	s.mu.Unlock()
}

// Calls returns how many requests for method arrived (with any token).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// Params returns the parameters of every request for method, in order.
func (s *Server) Params(method string) []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.params[strings.ToLower(method)]
	out := make([]map[string]string, len(src))
	copy(out, src)
	return out
}

// Sent returns the messages sendMessage accepted, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sent, len(s.sent))
	copy(out, s.sent)
	return out
}

// WaitSent waits until at least n messages were sent, and returns them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	for {
		if sent := s.Sent(); len(sent) >= n {
			return sent, nil
		}
		select {
		case <-ctx.Done():
			return s.Sent(), fmt.Errorf("wait for %d sent messages (have %d): %w", n, len(s.Sent()), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Offset returns the highest offset a client passed to getUpdates.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// Pending returns how many updates the server still holds.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Enqueue adds a message update (message or edited_message) and returns its
// update_id.
func (s *Server) Enqueue(m Message) int64 {
	chatType := m.ChatType
	if chatType == "" {
		chatType = "private"
	}
	chat := map[string]any{"id": m.ChatID, "type": chatType}
	if m.ChatTitle != "" {
		chat["title"] = m.ChatTitle
	}
	if m.ChatUser != "" {
		chat["username"] = m.ChatUser
	}
	fromName := m.FromName
	if fromName == "" {
		fromName = "Alice"
	}
	fromID := m.FromID
	if fromID == 0 {
		fromID = m.ChatID
	}
	from := map[string]any{"id": fromID, "is_bot": false, "first_name": fromName}
	if m.Username != "" {
		from["username"] = m.Username
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	s.mu.Lock()
	msgID := s.nextMsgID
	s.nextMsgID++
	s.mu.Unlock()
	msg := map[string]any{"message_id": msgID, "date": date.Unix(), "chat": chat, "from": from}
	if m.Text != "" {
		msg["text"] = m.Text
		if strings.HasPrefix(m.Text, "/") {
			n := len(strings.Fields(m.Text)[0])
			msg["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": n}}
		}
	}
	if m.Caption != "" {
		msg["caption"] = m.Caption
	}
	if m.Photo {
		msg["photo"] = []any{
			map[string]any{"file_id": "p-small", "file_unique_id": "ps", "width": 90, "height": 90},
			map[string]any{"file_id": "p-big", "file_unique_id": "pb", "width": 800, "height": 800},
		}
	}
	if m.Document != "" {
		msg["document"] = map[string]any{"file_id": "d1", "file_unique_id": "d1u", "file_name": m.Document}
	}
	if m.Voice {
		msg["voice"] = map[string]any{"file_id": "v1", "file_unique_id": "v1u", "duration": 3}
	}
	if m.Sticker {
		st := map[string]any{"file_id": "s1", "file_unique_id": "s1u", "type": "regular", "width": 512, "height": 512}
		if m.Emoji != "" {
			st["emoji"] = m.Emoji
		}
		msg["sticker"] = st
	}
	kind := "message"
	if m.Edited {
		kind = "edited_message"
		ed := m.EditDate
		if ed.IsZero() {
			ed = time.Now()
		}
		msg["edit_date"] = ed.Unix()
	}
	return s.EnqueueRaw(kind, msg)
}

// EnqueueRaw adds an update {"update_id": id, kind: payload} and returns id.
// payload is marshalled as JSON (a json.RawMessage is used as is), so any
// kind, known or not, can be queued.
func (s *Server) EnqueueRaw(kind string, payload any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	p, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: marshal payload: %v", err))
	}
	raw := fmt.Sprintf(`{"update_id":%d,%q:%s}`, id, kind, p)
	s.queue = append(s.queue, queued{id: id, raw: json.RawMessage(raw)})
	close(s.changed)
	s.changed = make(chan struct{})
	return id
}

// EnqueueJSON adds an update whose JSON (without update_id) is given
// verbatim, e.g. to deliver invalid UTF-8 or odd shapes; fields must be a JSON
// object body such as `"message":{...}`. It returns the update_id.
func (s *Server) EnqueueJSON(fields string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	raw := fmt.Sprintf(`{"update_id":%d,%s}`, id, fields)
	s.queue = append(s.queue, queued{id: id, raw: json.RawMessage(raw)})
	close(s.changed)
	s.changed = make(chan struct{})
	return id
}

// serve routes /bot<token>/<method>.
func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	method = strings.ToLower(method)
	params, err := readParams(req)

	s.mu.Lock()
	s.calls[method]++
	s.params[method] = append(s.params[method], params)
	var fault *Fault
	if token == s.Token && len(s.faults[method]) > 0 {
		f := s.faults[method][0]
		s.faults[method] = s.faults[method][1:]
		fault = &f
	}
	s.mu.Unlock()

	if token != s.Token {
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	if fault != nil {
		if fault.Delay > 0 && !s.wait(req.Context(), fault.Delay) {
			return
		}
		switch {
		case fault.Malformed:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":tru`))
			return
		case fault.Status != 0:
			desc := fault.Description
			if desc == "" {
				desc = defaultDescription(fault.Status, fault.RetryAfter)
			}
			writeError(w, fault.Status, desc, fault.RetryAfter)
			return
		}
	}
	switch method {
	case "getme":
		writeResult(w, map[string]any{"id": Bot.ID, "is_bot": true, "first_name": Bot.FirstName, "username": Bot.Username})
	case "getupdates":
		s.getUpdates(w, req, params)
	case "sendmessage":
		s.sendMessage(w, params)
	default:
		writeError(w, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

// wait sleeps d unless the request or the server ends first; it reports
// whether d elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// getUpdates confirms updates below offset, then waits up to timeout seconds
// for updates with id >= offset.
func (s *Server) getUpdates(w http.ResponseWriter, req *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeoutSec, _ := strconv.Atoi(p["timeout"])
	timeout := min(time.Duration(max(timeoutSec, 0))*time.Second, maxPollTimeout)
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		if offset > 0 {
			if offset > s.offset {
				s.offset = offset
			}
			if !s.retainAll {
				kept := s.queue[:0]
				for _, q := range s.queue {
					if q.id >= offset {
						kept = append(kept, q)
					}
				}
				s.queue = kept
			}
		}
		var out []json.RawMessage
		for _, q := range s.queue {
			if q.id >= offset && len(out) < limit {
				out = append(out, q.raw)
			}
		}
		changed := s.changed
		s.mu.Unlock()
		left := time.Until(deadline)
		if len(out) > 0 || left <= 0 {
			if out == nil {
				out = []json.RawMessage{}
			}
			writeResult(w, out)
			return
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			writeError(w, http.StatusBadGateway, "Bad Gateway: shutting down", 0)
			return
		}
		t.Stop()
	}
}

// sendMessage records a message, enforcing Telegram's text rules.
func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string) {
	chatID, text := p["chat_id"], p["text"]
	if chatID == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: chat_id is empty", 0)
		return
	}
	if strings.TrimSpace(text) == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: message text is empty", 0)
		return
	}
	if n := len(utf16.Encode([]rune(text))); n > MaxTextLen {
		writeError(w, http.StatusBadRequest, "Bad Request: message is too long", 0)
		return
	}
	s.mu.Lock()
	id := s.nextMsgID
	s.nextMsgID++
	now := time.Now()
	s.sent = append(s.sent, Sent{ChatID: chatID, Text: text, MessageID: id, At: now})
	s.mu.Unlock()
	numericID, _ := strconv.ParseInt(chatID, 10, 64)
	writeResult(w, map[string]any{
		"message_id": id,
		"date":       now.Unix(),
		"chat":       map[string]any{"id": numericID, "type": "private"},
		"from":       map[string]any{"id": Bot.ID, "is_bot": true, "first_name": Bot.FirstName, "username": Bot.Username},
		"text":       text,
	})
}

// readParams collects request parameters from the query string and a JSON,
// url-encoded or multipart body. JSON values that are not strings are kept
// as their JSON text.
func readParams(req *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range req.URL.Query() {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	if req.Method != http.MethodPost || req.Body == nil {
		return out, nil
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		dec := json.NewDecoder(http.MaxBytesReader(nil, req.Body, 8<<20))
		if err := dec.Decode(&m); err != nil {
			return out, fmt.Errorf("can't parse JSON: %w", err)
		}
		for k, raw := range m {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(raw)
			}
		}
	case "multipart/form-data":
		// A request without parameters (getMe) may come with an empty
		// multipart body; the real API accepts that.
		body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, 8<<20))
		if err != nil {
			return out, fmt.Errorf("can't read body: %w", err)
		}
		if len(body) == 0 {
			return out, nil
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err := req.ParseMultipartForm(8 << 20); err != nil {
			return out, fmt.Errorf("can't parse multipart form: %w", err)
		}
		for k, v := range req.MultipartForm.Value {
			if len(v) > 0 {
				out[k] = v[0]
			}
		}
	case "application/x-www-form-urlencoded":
		if err := req.ParseForm(); err != nil {
			return out, fmt.Errorf("can't parse form: %w", err)
		}
		for k, v := range req.PostForm {
			if len(v) > 0 {
				out[k] = v[0]
			}
		}
	case "":
	default:
		return out, errors.New("unsupported content type " + ct)
	}
	return out, nil
}

func defaultDescription(status, retryAfter int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "Too Many Requests: retry after " + strconv.Itoa(retryAfter)
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "Not Found"
	case http.StatusConflict:
		return "Conflict: terminated by other getUpdates request"
	}
	if status >= 500 {
		return http.StatusText(status)
	}
	return "Bad Request"
}

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeError(w http.ResponseWriter, status int, desc string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": status, "description": desc}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
