// This file holds the cockpit's HTTP endpoints other than the page and the
// WebSockets: the login code and login, and the JSON API.

package cockpit

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
)

// CodeResponse is POST /ui/code's answer.
type CodeResponse struct {
	Code      string `json:"code"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"` // RFC 3339
}

// Handoff is GET /ui/api/handoff's answer.
type Handoff struct {
	Path     string `json:"path"`
	Markdown string `json:"markdown"`
}

// Words is GET /ui/api/words' answer: the vocabulary the page shows,
// taken from where each rule lives so that web/app.js restates none of it.
type Words struct {
	// Stages are the delivery stages in plain words, in rank order: the
	// order of a message's path (status.PlainTable).
	Stages []status.PlainStage `json:"stages"`
	// Failed is the status of a message that could not be handed over.
	Failed status.Status `json:"failed"`
	// Tags are the priority tags a message may start with, compose's
	// choices (roles.PriorityTags). A message's own tags come with it
	// (the rows' and views' tags, roles.ShownTags).
	Tags []string `json:"tags"`
	// System is the hub's own role (roles.RoleSystem): its briefings and
	// notices fold to one line in the timeline.
	System string `json:"system"`
}

// words is the one Words the cockpit serves.
func words() Words {
	return Words{Stages: status.PlainTable(), Failed: status.Failed, Tags: roles.PriorityTags(), System: roles.RoleSystem}
}

// Verification is the ledger's hash-chain verification in GET
// /ui/api/verify.
type Verification struct {
	OK       bool   `json:"ok"`
	Rows     int64  `json:"rows"`     // event rows checked (the chain's length)
	Messages int64  `json:"messages"` // message rows checked
	Problem  string `json:"problem"`  // the first problem found; "" when OK
}

// ChainEvent is one ledger event of a message.
type ChainEvent struct {
	Event  string          `json:"event"`
	At     int64           `json:"at"` // Unix ms
	Detail json.RawMessage `json:"detail"`
	Hash   string          `json:"hash"`
}

// MessageChain is a message's events and whether each links to the event
// before it in the ledger's chain (its prev_hash is that event's hash).
type MessageChain struct {
	Events  []ChainEvent `json:"events"`
	ChainOK bool         `json:"chainOk"`
}

// verifyResponse is GET /ui/api/verify's answer; MessageID, Events and
// ChainOK are set with ?id=.
type verifyResponse struct {
	Verification
	MessageID string       `json:"messageId,omitempty"`
	Events    []ChainEvent `json:"events,omitempty"`
	ChainOK   *bool        `json:"chainOk,omitempty"`
}

// serveCode answers POST /ui/code: the operator (the CLI, never a
// browser) gets a one-time login code.
func (c *Cockpit) serveCode(w http.ResponseWriter, r *http.Request) {
	if _, ok := r.Header["Origin"]; ok {
		jsonError(w, http.StatusForbidden, "login codes are not given to browsers")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		jsonError(w, http.StatusMethodNotAllowed, "POST with the operator token")
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" || c.d.IsOperator == nil || !c.d.IsOperator(tok) {
		jsonError(w, http.StatusUnauthorized, "operator token required (Authorization: Bearer <runtime/hub-token>)")
		return
	}
	code, exp := c.store.issueCode()
	c.log.Info("cockpit login code issued", "expires", exp)
	writeJSON(w, CodeResponse{
		Code:      code,
		URL:       "http://127.0.0.1:" + strconv.Itoa(c.d.Port) + "/ui/login?code=" + code,
		ExpiresAt: exp.UTC().Format(time.RFC3339),
	})
}

// serveLogin answers GET /ui/login?code=C: a valid, unused code becomes a
// session cookie and a redirect to the page.
func (c *Cockpit) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet { // a HEAD (a link preview) must not use the code up
		w.Header().Set("Allow", http.MethodGet)
		htmlError(w, http.StatusMethodNotAllowed, "Method not allowed", "Open the login URL in the browser.")
		return
	}
	id, ok := c.store.redeem(r.URL.Query().Get("code"))
	if !ok {
		c.log.Info("cockpit login refused: used, expired or unknown code", "remote", r.RemoteAddr)
		htmlError(w, http.StatusUnauthorized, "Login code not valid",
			"This login code was used already, has expired or is unknown. Run `hm ui` again and open the new URL.")
		return
	}
	c.log.Info("cockpit login", "remote", r.RemoteAddr)
	http.SetCookie(w, sessionCookie(id))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// serveAPI answers GET /ui/api/<name>.
func (c *Cockpit) serveAPI(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		jsonError(w, http.StatusMethodNotAllowed, "GET only")
		return
	}
	ctx := r.Context()
	switch name {
	case "status":
		if c.d.Snapshot == nil {
			jsonError(w, http.StatusServiceUnavailable, "status is not available")
			return
		}
		writeJSON(w, c.d.Snapshot(ctx))
	case "handoff":
		if c.d.Handoff == nil {
			jsonError(w, http.StatusServiceUnavailable, "handoff is not available")
			return
		}
		h, err := c.d.Handoff(ctx)
		if err != nil {
			c.log.Warn("cockpit: read handoff", "err", err)
			jsonError(w, http.StatusInternalServerError, "read handoff: "+err.Error())
			return
		}
		writeJSON(w, h)
	case "verify":
		c.serveVerify(w, r)
	case "words":
		writeJSON(w, words())
	default:
		jsonError(w, http.StatusNotFound, "no such endpoint /ui/api/"+clip(name, 60))
	}
}

// serveVerify answers GET /ui/api/verify[?id=<messageId>].
func (c *Cockpit) serveVerify(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, withID := r.URL.Query().Get("id"), r.URL.Query().Has("id")
	if withID && !msgid.Valid(id) {
		jsonError(w, http.StatusBadRequest, "id is not a message id")
		return
	}
	if c.d.Verify == nil || (withID && c.d.MessageChain == nil) {
		jsonError(w, http.StatusServiceUnavailable, "the ledger is not available")
		return
	}
	var resp verifyResponse
	if withID {
		chain, found, err := c.d.MessageChain(ctx, id)
		if err != nil {
			c.log.Warn("cockpit: read message chain", "err", err)
			jsonError(w, http.StatusInternalServerError, "read the message's events: "+err.Error())
			return
		}
		if !found {
			jsonError(w, http.StatusNotFound, "no message "+id+" in the ledger")
			return
		}
		ok := chain.ChainOK
		resp.MessageID, resp.Events, resp.ChainOK = id, chain.Events, &ok
		if resp.Events == nil {
			resp.Events = []ChainEvent{}
		}
	}
	// One verification at a time: it reads the whole ledger.
	select {
	case c.verifying <- struct{}{}:
	case <-ctx.Done():
		jsonError(w, http.StatusServiceUnavailable, "gave up waiting for another verification")
		return
	}
	v, err := c.d.Verify(ctx)
	<-c.verifying
	if err != nil {
		c.log.Warn("cockpit: verify ledger", "err", err)
		jsonError(w, http.StatusInternalServerError, "verify the ledger: "+err.Error())
		return
	}
	resp.Verification = v
	if resp.ChainOK != nil && !v.OK && strings.Contains(v.Problem, "(message_id "+id+")") {
		// The first problem the verification found is this message's.
		*resp.ChainOK = false
	}
	writeJSON(w, resp)
}

// writeJSON writes v as a 200 JSON answer.
func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		jsonError(w, http.StatusInternalServerError, "encode: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

// jsonError writes {"error": msg} with code.
func jsonError(w http.ResponseWriter, code int, msg string) {
	data, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// clip shortens s to n bytes for messages.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
