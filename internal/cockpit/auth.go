// This file is the cockpit's authentication: one-time login codes, browser
// sessions and their cookie, and the checks every /ui request passes
// (loopback Host, same Origin, Sec-Fetch-Site).

package cockpit

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"hm/broker"
)

const (
	// CookieName is the session cookie's name.
	CookieName = "hm_ui"
	// CookiePath scopes the cookie to the cockpit.
	CookiePath = "/ui"
	// CodeTTL is how long a login code stays usable.
	CodeTTL = 2 * time.Minute
	// MaxSessions bounds the live browser sessions; a new login past it
	// ends the oldest.
	MaxSessions = 64
	// MaxCodes bounds the unused login codes kept; issuing one past it
	// drops the oldest.
	MaxCodes = 64

	codeBytes    = 16 // 128-bit login codes
	sessionBytes = 32 // 256-bit session ids
)

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never fails on supported platforms (Go 1.24+).
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// store holds the login codes and sessions, in memory only: they die with
// the hub. Keys are random 128/256-bit values looked up in maps, so a
// timing side channel would reveal nothing useful. Neither is ever logged.
type store struct {
	now func() time.Time

	mu       sync.Mutex
	codes    map[string]time.Time // code -> expiry
	sessions map[string]uint64    // session id -> creation order
	order    uint64
}

func newStore(now func() time.Time) *store {
	return &store{now: now, codes: map[string]time.Time{}, sessions: map[string]uint64{}}
}

// issueCode makes a single-use login code and returns it with its expiry.
func (s *store) issueCode() (string, time.Time) {
	code := randomHex(codeBytes)
	now := s.now()
	exp := now.Add(CodeTTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneCodes(now)
	for len(s.codes) >= MaxCodes {
		s.dropOldestCode()
	}
	s.codes[code] = exp
	return code, exp
}

// pruneCodes drops expired codes; s.mu is held.
func (s *store) pruneCodes(now time.Time) {
	for c, exp := range s.codes {
		if !now.Before(exp) {
			delete(s.codes, c)
		}
	}
}

// dropOldestCode drops the code that expires first; s.mu is held.
func (s *store) dropOldestCode() {
	var oldest string
	var at time.Time
	for c, exp := range s.codes {
		if oldest == "" || exp.Before(at) {
			oldest, at = c, exp
		}
	}
	delete(s.codes, oldest)
}

// redeem uses code up: it reports whether the code was known, unused and
// not expired, and then returns a new session id. A code is gone after its
// first use, whatever the outcome.
func (s *store) redeem(code string) (string, bool) {
	if !validHex(code, codeBytes) {
		return "", false
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[code]
	delete(s.codes, code)
	s.pruneCodes(now)
	if !ok || !now.Before(exp) {
		return "", false
	}
	id := randomHex(sessionBytes)
	for len(s.sessions) >= MaxSessions {
		s.dropOldestSession()
	}
	s.order++
	s.sessions[id] = s.order
	return id, true
}

// dropOldestSession ends the session created first; s.mu is held.
func (s *store) dropOldestSession() {
	var oldest string
	var n uint64
	for id, o := range s.sessions {
		if oldest == "" || o < n {
			oldest, n = id, o
		}
	}
	delete(s.sessions, oldest)
}

// valid reports whether id is a live session.
func (s *store) valid(id string) bool {
	if !validHex(id, sessionBytes) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	return ok
}

// authenticated reports whether r carries a live session's cookie. Every
// hm_ui cookie counts, not only the first: another site on 127.0.0.1 (any
// port) can set one that the browser sends first.
func (s *store) authenticated(r *http.Request) bool {
	for _, c := range r.CookiesNamed(CookieName) {
		if s.valid(c.Value) {
			return true
		}
	}
	return false
}

// SessionFromRequest returns the value of r's first hm_ui cookie that has
// the shape of a session id, or "".
func SessionFromRequest(r *http.Request) string {
	for _, c := range r.CookiesNamed(CookieName) {
		if validHex(c.Value, sessionBytes) {
			return c.Value
		}
	}
	return ""
}

// validHex reports whether s is exactly n bytes in lower-case hex.
func validHex(s string, n int) bool {
	if len(s) != 2*n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// sessionCookie is the Set-Cookie for a new session: a browser-session
// cookie (no Max-Age), scoped to /ui, unreadable by scripts and never sent
// with cross-site requests.
func sessionCookie(id string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: id, Path: CookiePath, HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// checkRequest applies the checks every /ui request passes; it returns
// the reason to refuse it with 403, or "".
func checkRequest(r *http.Request) string {
	if !broker.LoopbackHost(r.Host) {
		return "only loopback hosts are served"
	}
	if o, ok := r.Header["Origin"]; ok && (len(o) != 1 || o[0] != "http://"+r.Host) {
		return "cross-origin request refused"
	}
	if f, ok := r.Header["Sec-Fetch-Site"]; ok && (len(f) != 1 || (f[0] != "same-origin" && f[0] != "none")) {
		return "cross-site request refused"
	}
	return ""
}
