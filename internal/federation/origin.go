package federation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// ErrDuplicateHub is wrapped when another live hub of the team uses this
// hub's name: each would ignore the other's presence as its own, and the
// messages between them would wait unseen.
var ErrDuplicateHub = errors.New("federation: hub name already in use on the team")

// Origin is the fingerprint of a hub's place: its host name and the hm
// root it serves (16 hex digits of a SHA-256). One root has one hub at a
// time (the root's lock), so a presence with this hub's name and another
// origin is another hub; the same origin is this hub's own, e.g. the one it
// published before a restart.
func Origin(host, root string) string {
	sum := sha256.Sum256([]byte("hm hub origin\x00" + host + "\x00" + root))
	return hex.EncodeToString(sum[:8])
}

// DefaultHub is a hub's name without --hub or credentials: its host name
// (made a NATS token) and the first 6 digits of its origin, so two hubs on
// one machine, on two roots, are two names.
func DefaultHub(host, origin string) string {
	const tag = 6
	name := sanitize(host)
	if len(name) > 64-1-tag {
		name = name[:64-1-tag]
	}
	return name + "-" + origin[:tag]
}
