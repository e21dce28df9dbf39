package federation

import (
	"encoding/base64"
	"fmt"

	"github.com/nats-io/nkeys"
)

// A hub with NATS credentials signs what it publishes (presence and
// envelopes) with its user nkey; its identity (Presence.Hub, Envelope.Hub)
// is that key's public key, so a receiver checks a signature against the
// hub the payload names. The signature is over the payload's JSON with an
// empty sig field, base64url without padding.

// sign returns the signature of unsigned by kp, whose public key must be
// hub.
func sign(kp nkeys.KeyPair, hub string, unsigned []byte) (string, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("federation: signing key: %w", err)
	}
	if pub != hub {
		return "", fmt.Errorf("federation: sign for %s with the key of %s", hub, pub)
	}
	sig, err := kp.Sign(unsigned)
	if err != nil {
		return "", fmt.Errorf("federation: sign: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sig), nil
}

// verify reports whether sig is hub's signature of unsigned, hub read as a
// NATS user public key.
func verify(hub, sig string, unsigned []byte) bool {
	if sig == "" || !nkeys.IsValidPublicUserKey(hub) {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	pk, err := nkeys.FromPublicKey(hub)
	if err != nil {
		return false
	}
	return pk.Verify(unsigned, raw) == nil
}
