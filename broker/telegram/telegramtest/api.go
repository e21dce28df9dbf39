// This file answers the Bot API methods: routing, getUpdates long-polling,
// sendMessage, parameter decoding and the JSON envelopes.

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
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

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
