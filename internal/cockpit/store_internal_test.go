package cockpit

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStoreBounded: at most MaxSessions sessions live (a new login ends the
// oldest) and at most MaxCodes codes wait (a new code drops the one that
// expires first); expired codes are pruned when a code is issued or used.
func TestStoreBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newStore(func() time.Time { return now })
	var ids []string
	for i := 0; i < MaxSessions+3; i++ {
		code, _ := s.issueCode()
		id, ok := s.redeem(code)
		if !ok {
			t.Fatalf("login %d refused", i)
		}
		ids = append(ids, id)
	}
	if len(s.sessions) != MaxSessions {
		t.Fatalf("%d sessions live, want %d", len(s.sessions), MaxSessions)
	}
	for i, id := range ids {
		if want := i >= 3; s.valid(id) != want {
			t.Errorf("session %d valid = %v, want %v", i, !want, want)
		}
	}

	var codes []string
	for i := 0; i < MaxCodes+2; i++ {
		c, _ := s.issueCode()
		codes = append(codes, c)
		now = now.Add(time.Millisecond)
	}
	if len(s.codes) != MaxCodes {
		t.Fatalf("%d codes kept, want %d", len(s.codes), MaxCodes)
	}
	if _, ok := s.redeem(codes[0]); ok {
		t.Error("the oldest code survived the bound")
	}
	if _, ok := s.redeem(codes[len(codes)-1]); !ok {
		t.Error("the newest code was dropped")
	}
	now = now.Add(CodeTTL)
	s.issueCode()
	if len(s.codes) != 1 {
		t.Errorf("%d codes after expiry, want only the new one", len(s.codes))
	}
}

// TestContentType: ES modules are JavaScript; every type the page uses
// is named.
func TestContentType(t *testing.T) {
	for name, want := range map[string]string{
		"index.html":                   "text/html; charset=utf-8",
		"app.js":                       "text/javascript; charset=utf-8",
		"vendor/xterm/xterm.mjs":       "text/javascript; charset=utf-8",
		"vendor/xterm/addon-fit.JS":    "text/javascript; charset=utf-8",
		"style.css":                    "text/css; charset=utf-8",
		"vendor/xterm/xterm.css":       "text/css; charset=utf-8",
		"vendor/xterm/xterm.js.map":    "application/json",
		"vendor/xterm/LICENSE":         "application/octet-stream",
		"icon.svg":                     "image/svg+xml",
		"vendor/xterm/package.json":    "application/json",
		"vendor/xterm/font.woff2":      "font/woff2",
		"screens/cockpit-1280x800.png": "image/png",
	} {
		if got := contentType(name); got != want {
			t.Errorf("contentType(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzSessionCookie: whatever Cookie header a request carries, only the
// live session's id authenticates it, and parsing never panics.
func FuzzSessionCookie(f *testing.F) {
	s := newStore(time.Now)
	code, _ := s.issueCode()
	live, ok := s.redeem(code)
	if !ok {
		f.Fatal("login refused")
	}
	f.Add("hm_ui=" + live)
	f.Add("hm_ui=" + strings.ToUpper(live))
	f.Add("a=b; hm_ui=" + live + "; hm_ui=x")
	f.Add("hm_ui=" + live[:63])
	f.Add(`hm_ui="` + live + `"`)
	f.Add("hm_ui=" + live + "\x00")
	f.Add(";;;=;hm_ui")
	f.Fuzz(func(t *testing.T, cookie string) {
		r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/ui/", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Cookie", cookie)
		got := SessionFromRequest(r)
		if got != "" && !validHex(got, sessionBytes) {
			t.Fatalf("SessionFromRequest(%q) = %q, not a session id", cookie, got)
		}
		if s.authenticated(r) && !strings.Contains(cookie, live) {
			t.Fatalf("cookie %q authenticated without the live session's id", cookie)
		}
	})
}

// FuzzRedeem: no string but an issued, unused code logs in.
func FuzzRedeem(f *testing.F) {
	f.Add("")
	f.Add(strings.Repeat("a", 32))
	f.Add(strings.Repeat("A", 32))
	f.Add("../" + strings.Repeat("0", 29))
	f.Fuzz(func(t *testing.T, code string) {
		s := newStore(time.Now)
		issued, _ := s.issueCode()
		if _, ok := s.redeem(code); ok != (code == issued) {
			t.Fatalf("redeem(%q) = %v (issued %q)", code, ok, issued)
		}
	})
}
