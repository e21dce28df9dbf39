package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nkeys"
)

// MaxPresenceRoles bounds the roles one presence may list.
const MaxPresenceRoles = 64

// RoleState is one role a hub hosts and its pane's state (idle, busy,
// exited, starting, ...).
type RoleState struct {
	Role  string `json:"role"`
	State string `json:"state"`
}

// Presence is what a hub publishes on hm.<team>.presence.<hub>: the roles
// it hosts, when, and for how long this is to be believed.
type Presence struct {
	Hub string `json:"hub"`
	// Origin is the publishing hub's Origin (host and root): two hubs
	// that use one name are told apart by it.
	Origin string      `json:"origin,omitempty"`
	Roles  []RoleState `json:"roles"`
	AtMs   int64       `json:"atMs"`
	TTLMs  int64       `json:"ttlMs"`
	// Sig is the signature (base64url, raw) of the presence without Sig by
	// the hub's NATS user nkey; Hub is then that nkey's public key.
	Sig string `json:"sig,omitempty"`
}

// Presence errors.
var (
	ErrBadPresence = errors.New("federation: bad presence")
	ErrUnsigned    = errors.New("federation: presence not signed by its hub's NATS identity")
)

func (p Presence) unsigned() ([]byte, error) {
	p.Sig = ""
	return json.Marshal(p)
}

// Sign sets p.Sig with kp, whose public key must be p.Hub.
func (p *Presence) Sign(kp nkeys.KeyPair) error {
	data, err := p.unsigned()
	if err != nil {
		return err
	}
	p.Sig, err = sign(kp, p.Hub, data)
	return err
}

// Signed reports whether p carries a signature that verifies against p.Hub
// read as a NATS user public key.
func (p Presence) Signed() bool {
	data, err := p.unsigned()
	return err == nil && verify(p.Hub, p.Sig, data)
}

// ParsePresence decodes and checks a presence received on subject hub's
// presence subject: the hub in the payload must be the subject's, every
// role a token listed once, at most MaxPresenceRoles, a positive TTL.
func ParsePresence(data []byte, subjectHub string) (Presence, error) {
	var p Presence
	if err := json.Unmarshal(data, &p); err != nil {
		return Presence{}, fmt.Errorf("%w: %v", ErrBadPresence, err)
	}
	if !validToken(p.Hub) || p.Hub != subjectHub {
		return Presence{}, fmt.Errorf("%w: hub %q on the subject of %q", ErrBadPresence, p.Hub, subjectHub)
	}
	if len(p.Origin) > 64 {
		return Presence{}, fmt.Errorf("%w: origin of %d bytes", ErrBadPresence, len(p.Origin))
	}
	if len(p.Roles) > MaxPresenceRoles {
		return Presence{}, fmt.Errorf("%w: %d roles", ErrBadPresence, len(p.Roles))
	}
	if p.TTLMs <= 0 || p.TTLMs > int64(time.Hour/time.Millisecond) || p.AtMs <= 0 {
		return Presence{}, fmt.Errorf("%w: at %d ttl %d", ErrBadPresence, p.AtMs, p.TTLMs)
	}
	seen := map[string]bool{}
	for _, r := range p.Roles {
		if !validToken(r.Role) || seen[r.Role] || len(r.State) > 64 {
			return Presence{}, fmt.Errorf("%w: role %q", ErrBadPresence, r.Role)
		}
		seen[r.Role] = true
	}
	return p, nil
}

func (p Presence) marshal() ([]byte, error) { return json.Marshal(p) }
