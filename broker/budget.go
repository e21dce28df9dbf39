// This file is the connection budgets: how many connections of each kind
// the hub serves at once, so that one kind cannot crowd out another.

package broker

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
)

// Budget caps the connections of one kind (docs/protocol.md, "Connection
// budgets"): past Max a new one is refused with HTTP 503 and a sentence
// naming the kind and what to do.
type Budget struct {
	// Kind names what is counted, in the refusal ("unregistered
	// connections").
	Kind string
	Max  int
	// Hint says what the client does next.
	Hint string
	n    atomic.Int64
}

// NewBudget returns a budget of max connections of kind.
func NewBudget(kind string, max int, hint string) *Budget {
	return &Budget{Kind: kind, Max: max, Hint: hint}
}

// Acquire takes a place; false when the budget is full.
func (b *Budget) Acquire() bool {
	if b.n.Add(1) > int64(b.Max) {
		b.n.Add(-1)
		return false
	}
	return true
}

// Release gives a place back.
func (b *Budget) Release() { b.n.Add(-1) }

// Open is the number of places taken.
func (b *Budget) Open() int { return int(b.n.Load()) }

// Refusal is the sentence of a refusal.
func (b *Budget) Refusal() string {
	return fmt.Sprintf("hm: connection limit for %s (%d) reached; %s", b.Kind, b.Max, b.Hint)
}

// Refuse answers r with HTTP 503 and the refusal, and logs it.
func (b *Budget) Refuse(w http.ResponseWriter, r *http.Request, log *slog.Logger) {
	log.Warn("connection refused: limit reached", "kind", b.Kind, "max", b.Max, "remote", r.RemoteAddr, "path", r.URL.Path)
	http.Error(w, b.Refusal(), http.StatusServiceUnavailable)
}

// Limit serves next within the budget: a request past it is refused.
func (b *Budget) Limit(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !b.Acquire() {
			b.Refuse(w, r, log)
			return
		}
		defer b.Release()
		next.ServeHTTP(w, r)
	})
}

// RequestToken is the token an HTTP request carries: "Authorization:
// Bearer <token>", else the query's token parameter; "" when neither.
func RequestToken(r *http.Request) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return tok
	}
	return r.URL.Query().Get("token")
}
