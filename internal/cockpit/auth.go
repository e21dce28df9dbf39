// This file is the cockpit's authentication: one-time login codes, browser
// sessions and their cookie, and the checks every /ui request passes
// (loopback Host, same Origin, Sec-Fetch-Site).

package cockpit

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"hm/broker"
	"hm/internal/ground/atomicfile"
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

// store holds the login codes, in memory only (they die with the hub), and
// the sessions, by a MAC of their id under key (Deps.SessionKey), also
// kept in file (Deps.SessionFile) so that a page open across a hub restart
// stays logged in. Keys are random 128/256-bit values looked up in maps,
// so a timing side channel would reveal nothing useful. Neither codes nor
// session ids are ever logged or written.
type store struct {
	now  func() time.Time
	key  []byte
	file string // "": sessions are not kept across restarts
	log  *slog.Logger

	mu       sync.Mutex
	codes    map[string]time.Time // code -> expiry
	sessions map[string]uint64    // MAC of a session id -> creation order
	order    uint64
}

func newStore(now func() time.Time) *store {
	return &store{now: now, log: slog.New(slog.DiscardHandler), codes: map[string]time.Time{}, sessions: map[string]uint64{}}
}

// newPersistentStore is newStore whose sessions are MACs under key, read
// from file and written back to it at each login. A file that cannot be
// read is logged and the store starts empty.
func newPersistentStore(now func() time.Time, key []byte, file string, log *slog.Logger) *store {
	s := newStore(now)
	s.key, s.file, s.log = key, file, log
	if file == "" {
		return s
	}
	macs, err := readSessions(file)
	if err != nil {
		log.Warn("cockpit: sessions of the last run not kept", "err", err)
	}
	for _, m := range macs[max(0, len(macs)-MaxSessions):] {
		s.order++
		s.sessions[m] = s.order
	}
	return s
}

// readSessions reads a session file: one MAC in hex per line, oldest
// first; lines of another shape are skipped. A missing file holds none.
func readSessions(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	var macs []string
	for line := range bytes.Lines(data) {
		if m := string(bytes.TrimSpace(line)); validHex(m, sha256.Size) {
			macs = append(macs, m)
		}
	}
	return macs, nil
}

// saveLocked writes the live sessions' MACs to s.file, oldest first; s.mu
// is held. A failure is logged: the sessions still hold in memory.
func (s *store) saveLocked() {
	if s.file == "" {
		return
	}
	macs := make([]string, 0, len(s.sessions))
	for m := range s.sessions {
		macs = append(macs, m)
	}
	slices.SortFunc(macs, func(a, b string) int { return cmp.Compare(s.sessions[a], s.sessions[b]) })
	var b bytes.Buffer
	for _, m := range macs {
		b.WriteString(m + "\n")
	}
	if err := atomicfile.WriteFile(s.file, b.Bytes(), 0o600); err != nil {
		s.log.Warn("cockpit: sessions not kept for the next run", "err", err)
	}
}

// mac is what the store keeps of session id.
func (s *store) mac(id string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
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
	s.sessions[s.mac(id)] = s.order
	s.saveLocked()
	return id, true
}

// dropOldestSession ends the session created first; s.mu is held.
func (s *store) dropOldestSession() {
	var oldest string
	var n uint64
	for m, o := range s.sessions {
		if oldest == "" || o < n {
			oldest, n = m, o
		}
	}
	delete(s.sessions, oldest)
}

// valid reports whether id is a live session.
func (s *store) valid(id string) bool {
	if !validHex(id, sessionBytes) {
		return false
	}
	m := s.mac(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[m]
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
