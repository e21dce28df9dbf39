package broker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
)

// Identity is who a token (or --allow-anonymous) says a client is.
type Identity struct {
	Role     string
	Operator bool
}

// Tokens holds the operator secret and the per-pane tokens of this session.
// Pane tokens are valid for one role only and die with the hub process.
type Tokens struct {
	operator string
	mu       sync.RWMutex
	byToken  map[string]string // token -> role
	byRole   map[string]string // role -> token
}

// NewTokens returns a store whose operator secret is operator.
func NewTokens(operator string) *Tokens {
	return &Tokens{operator: operator, byToken: map[string]string{}, byRole: map[string]string{}}
}

// RandomToken returns 32 random bytes, hex encoded.
func RandomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// Issue returns the token for role, creating one if needed.
func (t *Tokens) Issue(role string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := t.byRole[role]; ok {
		return tok
	}
	tok := RandomToken()
	t.byRole[role] = tok
	t.byToken[tok] = role
	return tok
}

// Accept makes tok valid for role too, beside the token Issue gives: the
// token a pane's program got from an earlier hub, when this hub adopted
// the program from its keeper (agent.Keeper) instead of starting it.
func (t *Tokens) Accept(role, tok string) {
	if tok == "" || tok == t.operator {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byToken[tok] = role
}

// Revoke invalidates role's tokens (a background slot that ended).
func (t *Tokens) Revoke(role string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tok, r := range t.byToken {
		if r == role {
			delete(t.byToken, tok)
		}
	}
	delete(t.byRole, role)
}

// Check maps a token to an identity. Comparison with the operator secret is
// constant-time.
func (t *Tokens) Check(token string) (Identity, bool) {
	if token == "" {
		return Identity{}, false
	}
	if t.operator != "" && subtle.ConstantTimeCompare([]byte(token), []byte(t.operator)) == 1 {
		return Identity{Operator: true}, true
	}
	t.mu.RLock()
	role, ok := t.byToken[token]
	t.mu.RUnlock()
	if !ok {
		return Identity{}, false
	}
	return Identity{Role: role}, true
}

// IsOperator reports whether token is the operator secret.
func (t *Tokens) IsOperator(token string) bool {
	id, ok := t.Check(token)
	return ok && id.Operator
}

// Key derives a key for purpose from the operator secret (HMAC-SHA256 of
// purpose): what is made with it is void once the secret is replaced (hm
// token rotate), and the secret itself is never handed out.
func (t *Tokens) Key(purpose string) []byte {
	m := hmac.New(sha256.New, []byte(t.operator))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Match finds the token that passes verify among the operator secret and
// the tokens valid for role, the one issued to it and any accepted for it
// (a trigger file's signature, SPEC §7), without handing tokens out: a file
// is signed by the same tokens Check lets register. The operator may claim
// any role.
func (t *Tokens) Match(role string, verify func(token string) bool) (Identity, bool) {
	if t.operator != "" && verify(t.operator) {
		return Identity{Role: role, Operator: true}, true
	}
	var toks []string
	t.mu.RLock()
	for tok, r := range t.byToken {
		if r == role {
			toks = append(toks, tok)
		}
	}
	t.mu.RUnlock()
	for _, tok := range toks {
		if verify(tok) {
			return Identity{Role: role}, true
		}
	}
	return Identity{}, false
}
