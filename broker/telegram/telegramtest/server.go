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
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
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

// Sent is a message received by sendMessage.
type Sent struct {
	ChatID    string // as the client sent it
	Text      string
	MessageID int
	At        time.Time
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
