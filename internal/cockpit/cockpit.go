// Package cockpit serves hm's web cockpit under /ui/ on the hub's listener
// (issue #17): the embedded page, a login by one-time code that sets a
// session cookie, the broker's protocol and pane attach over WebSockets
// for the logged-in browser, and a few read-only JSON endpoints. It knows
// nothing of the hub: the hub hands it what it needs in Deps.
//
// Routes (docs/protocol.md §17):
//
//	POST /ui/code              operator token -> one-time login code and URL
//	GET  /ui/login?code=C      code -> session cookie, 303 to /ui/
//	GET  /ui/ws                WebSocket: the broker's protocol, as the operator
//	GET  /ui/attach/<pane>     WebSocket: the /attach/<pane> protocol
//	GET  /ui/api/status        the hub's status (hm status --json)
//	GET  /ui/api/handoff       {"path","markdown"}
//	GET  /ui/api/verify[?id=]  the ledger's hash-chain verification
//	GET  /ui/api/words         the delivery stages in plain words (status.PlainTable)
//	GET  /ui/<file>            the embedded page (web/)
package cockpit

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Deps is what the cockpit needs from the hub.
type Deps struct {
	// Port is the hub's port, for the login URL.
	Port int
	// IsOperator reports whether token is the operator secret.
	IsOperator func(token string) bool
	// ServeWS serves the broker's protocol on a request the cockpit has
	// authenticated, as the operator (broker.Broker.ServeOperatorWS).
	ServeWS http.HandlerFunc
	// Attach returns the /attach/<pane> handler with authorize as its
	// check (agent.AttachHandlerContext).
	Attach func(authorize func(*http.Request) bool) http.Handler
	// Snapshot is the hub's status, what `hm status --json` prints.
	Snapshot func(ctx context.Context) any
	// Handoff returns the current handoff (handoffs/session.md, else the
	// briefing); empty Markdown when there is none.
	Handoff func(ctx context.Context) (Handoff, error)
	// Verify checks the ledger's hash chain (`hm journal verify`).
	Verify func(ctx context.Context) (Verification, error)
	// MessageChain returns one message's events and whether their chain
	// links hold; found is false for an unknown message.
	MessageChain func(ctx context.Context, messageID string) (chain MessageChain, found bool, err error)
	// SessionKey keys what is kept of the login sessions: the hub derives
	// it from the operator secret, so a new secret (hm token rotate) ends
	// every session.
	SessionKey []byte
	// SessionFile keeps the login sessions across hub restarts (MACs of
	// their ids under SessionKey, mode 0600); "" keeps them in memory only.
	SessionFile string
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock for login codes; nil is time.Now.
	Now func() time.Time
}

// Cockpit is the /ui/ handler.
type Cockpit struct {
	d      Deps
	log    *slog.Logger
	store  *store
	attach http.Handler

	verifying chan struct{} // holds a token while a ledger verification runs
}

// New returns the cockpit for d; mount it at "/ui/".
func New(d Deps) *Cockpit {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	c := &Cockpit{d: d, log: d.Logger, store: newPersistentStore(d.Now, d.SessionKey, d.SessionFile, d.Logger), verifying: make(chan struct{}, 1)}
	if d.Attach != nil {
		c.attach = d.Attach(c.store.authenticated)
	}
	return c
}

// ServeHTTP routes a /ui request after the checks every one passes.
func (c *Cockpit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w.Header())
	rest, ok := strings.CutPrefix(r.URL.Path, "/ui/")
	api := ok && strings.HasPrefix(rest, "api/")
	if why := checkRequest(r); why != "" {
		c.log.Info("cockpit request refused", "path", r.URL.Path, "why", why, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
		c.fail(w, api || (ok && rest == "code"), http.StatusForbidden, why)
		return
	}
	if !ok {
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, "/ui/", http.StatusSeeOther)
			return
		}
		htmlError(w, http.StatusNotFound, "Not found", "No such page in the cockpit.")
		return
	}
	switch rest {
	case "code":
		c.serveCode(w, r)
		return
	case "login":
		c.serveLogin(w, r)
		return
	}
	if !c.store.authenticated(r) {
		if api {
			jsonError(w, http.StatusUnauthorized, "not logged in: run `hm ui` and open the URL it prints")
		} else {
			loginPage(w)
		}
		return
	}
	switch {
	case rest == "ws":
		if c.d.ServeWS == nil {
			http.Error(w, "hm: the broker is not available", http.StatusServiceUnavailable)
			return
		}
		c.d.ServeWS(w, r)
	case strings.HasPrefix(rest, "attach/"):
		if c.attach == nil {
			http.Error(w, "hm: attach is not available", http.StatusServiceUnavailable)
			return
		}
		c.attach.ServeHTTP(w, r)
	case api:
		c.serveAPI(w, r, strings.TrimPrefix(rest, "api/"))
	default:
		serveAsset(w, r, rest)
	}
}

// fail answers a refused request: JSON for the API, else a short page.
func (c *Cockpit) fail(w http.ResponseWriter, api bool, code int, msg string) {
	if api {
		jsonError(w, code, msg)
		return
	}
	htmlError(w, code, http.StatusText(code), "hm: "+msg+".")
}

// htmlError writes a short HTML page.
func htmlError(w http.ResponseWriter, code int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>hm cockpit: %s</title></head>\n<body><h1>%s</h1><p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

// loginPage is the 401 page of a browser without a valid session or code.
func loginPage(w http.ResponseWriter) {
	htmlError(w, http.StatusUnauthorized, "Not logged in",
		"Run `hm ui` in a terminal and open the URL it prints: each login URL works once, for two minutes.")
}
