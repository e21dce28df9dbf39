package federation

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// ErrForeignClaim is wrapped when a presence claims a role this hub hosts,
// or one another live hub already claims.
var ErrForeignClaim = errors.New("federation: claim of a role hosted elsewhere")

// RemotePane is a role another hub hosts, as its presence said.
type RemotePane struct {
	Role  string
	Hub   string
	State string
	// Seen is when that hub's presence was last accepted.
	Seen time.Time
}

type peer struct {
	p       Presence
	seen    time.Time
	expires time.Time
}

// Peers is the table of other hubs' presences: which hub hosts which role,
// until its presence expires. It refuses claims of roles this hub hosts
// (Local) and of roles another live hub claims first, and, when signatures
// are required (this hub has a NATS identity), unsigned presences.
type Peers struct {
	self       string
	local      func(role string) bool
	requireSig bool
	log        *slog.Logger
	now        func() time.Time

	mu    sync.Mutex
	peers map[string]peer // hub -> latest accepted presence
	// lastAt is the AtMs of each hub's latest accepted presence, kept
	// after it expires: an older presence is a replay (or out of order)
	// and is refused, and the same one again does not extend its life.
	lastAt map[string]int64
}

// MaxPresenceSkew is how far behind this hub's clock a presence's end
// (AtMs + TTLMs) may be before the presence is refused as stale: the
// hubs' clocks may differ by that much, and a presence captured earlier
// cannot be replayed to keep a hub that is gone alive.
const MaxPresenceSkew = time.Minute

// ErrStalePresence is wrapped when a presence is older than the latest
// accepted from its hub, or ended more than MaxPresenceSkew ago.
var ErrStalePresence = errors.New("federation: stale or replayed presence")

// NewPeers returns an empty table for hub self. local reports the roles
// this hub hosts.
func NewPeers(self string, local func(role string) bool, requireSig bool, log *slog.Logger, now func() time.Time) *Peers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Peers{self: self, local: local, requireSig: requireSig, log: log, now: now, peers: map[string]peer{}, lastAt: map[string]int64{}}
}

// Accept records p, or refuses it (logged by the caller) and keeps what
// the table had. A presence of this hub itself is ignored.
func (t *Peers) Accept(p Presence) error {
	if p.Hub == t.self {
		return nil
	}
	if t.requireSig && !p.Signed() {
		return fmt.Errorf("%w: hub %s", ErrUnsigned, p.Hub)
	}
	if p.Sig != "" && !p.Signed() {
		return fmt.Errorf("%w: hub %s: the signature does not verify", ErrUnsigned, p.Hub)
	}
	now := t.now()
	if end := time.UnixMilli(p.AtMs + p.TTLMs); now.Sub(end) > MaxPresenceSkew {
		return fmt.Errorf("%w: hub %s: it ended at %s", ErrStalePresence, p.Hub, end.UTC().Format(time.RFC3339))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	last, seenBefore := t.lastAt[p.Hub]
	if seenBefore && p.AtMs < last {
		return fmt.Errorf("%w: hub %s: made at %d, before the one accepted (%d)", ErrStalePresence, p.Hub, p.AtMs, last)
	}
	for _, r := range p.Roles {
		if t.local != nil && t.local(r.Role) {
			return fmt.Errorf("%w: hub %s claims %s, which this hub hosts", ErrForeignClaim, p.Hub, r.Role)
		}
		if q, ok := t.hostLocked(r.Role, p.Hub, now); ok {
			return fmt.Errorf("%w: hub %s claims %s, which hub %s hosts", ErrForeignClaim, p.Hub, r.Role, q.Hub)
		}
	}
	expires := now.Add(time.Duration(p.TTLMs) * time.Millisecond)
	if q, ok := t.peers[p.Hub]; ok && seenBefore && p.AtMs == last {
		expires = q.expires // the same presence again lives no longer
	}
	t.peers[p.Hub] = peer{p: p, seen: now, expires: expires}
	t.lastAt[p.Hub] = p.AtMs
	return nil
}

// Host returns the live hub that hosts role.
func (t *Peers) Host(role string) (RemotePane, bool) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hostLocked(role, t.self, now) // self is never in the table
}

// hostLocked returns the live hub other than skip that hosts role; t.mu is
// held.
func (t *Peers) hostLocked(role, skip string, now time.Time) (RemotePane, bool) {
	for hub, q := range t.peers {
		if hub == skip || !now.Before(q.expires) {
			continue
		}
		for _, r := range q.p.Roles {
			if r.Role == role {
				return RemotePane{Role: role, Hub: hub, State: r.State, Seen: q.seen}, true
			}
		}
	}
	return RemotePane{}, false
}

// Claims reports whether hub is live and hosts role.
func (t *Peers) Claims(hub, role string) bool {
	p, ok := t.Host(role)
	return ok && p.Hub == hub
}

// Panes lists every role live hubs host, by role.
func (t *Peers) Panes() []RemotePane {
	now := t.now()
	t.mu.Lock()
	var out []RemotePane
	for hub, q := range t.peers {
		if !now.Before(q.expires) {
			delete(t.peers, hub)
			continue
		}
		for _, r := range q.p.Roles {
			out = append(out, RemotePane{Role: r.Role, Hub: hub, State: r.State, Seen: q.seen})
		}
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Role < out[j].Role })
	return out
}

// Live reports whether hub's presence is current.
func (t *Peers) Live(hub string) bool {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.peers[hub]
	return ok && now.Before(q.expires)
}
