package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nats-io/nkeys"
)

// MaxContent bounds an envelope's content (the broker's own limit is
// smaller; this only keeps a hostile payload from costing much).
const MaxContent = 1 << 20

// Envelope is one message on hm.<team>.to.<role>: the sender's hub
// committed it (and numbered it) before publishing; the hosting hub
// records it under the same MessageID before typing it.
type Envelope struct {
	MessageID string `json:"messageId"`
	// Hub is the publishing hub's identity; From must be a role it hosts
	// (or user/system, its own people and itself).
	Hub      string `json:"hub"`
	From     string `json:"from"`
	Target   string `json:"target"`
	Seq      int64  `json:"seq,omitempty"`
	Header   string `json:"header,omitempty"`
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Channel  string `json:"channel,omitempty"`
	SentAtMs int64  `json:"sentAtMs,omitempty"`
	// Metadata is the sender's metadata object, as JSON.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Sig is Hub's signature of the envelope without Sig (sign.go), set
	// by a hub with NATS credentials.
	Sig string `json:"sig,omitempty"`
}

// ErrForged is wrapped by Authentic's refusals.
var ErrForged = errors.New("federation: envelope not signed by the hub it names")

func (e Envelope) unsigned() ([]byte, error) {
	e.Sig = ""
	return json.Marshal(e)
}

// Sign sets e.Sig with kp, whose public key must be e.Hub.
func (e *Envelope) Sign(kp nkeys.KeyPair) error {
	data, err := e.unsigned()
	if err != nil {
		return err
	}
	e.Sig, err = sign(kp, e.Hub, data)
	return err
}

// Authentic checks that e comes from the hub it names: a signature, when
// present, must verify against e.Hub; requireSig (the receiving hub has
// credentials, so its peers do) refuses an unsigned envelope. Without
// credentials anywhere, e.Hub is taken on trust (docs/federation.md).
func (e Envelope) Authentic(requireSig bool) error {
	if e.Sig == "" {
		if requireSig {
			return fmt.Errorf("%w: %s sent %s unsigned", ErrForged, e.Hub, e.MessageID)
		}
		return nil
	}
	data, err := e.unsigned()
	if err != nil || !verify(e.Hub, e.Sig, data) {
		return fmt.Errorf("%w: the signature of %s does not verify against %s", ErrForged, e.MessageID, e.Hub)
	}
	return nil
}

// ErrBadEnvelope is wrapped by ParseEnvelope's errors.
var ErrBadEnvelope = errors.New("federation: bad envelope")

// Marshal encodes e.
func (e Envelope) Marshal() ([]byte, error) { return json.Marshal(e) }

// ParseEnvelope decodes and checks data: an id, a hub, a sender and a
// target that are tokens, UTF-8 content within MaxContent, metadata that
// is a JSON object if present.
func ParseEnvelope(data []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrBadEnvelope, err)
	}
	switch {
	case e.MessageID == "" || len(e.MessageID) > 128:
		return Envelope{}, fmt.Errorf("%w: messageId", ErrBadEnvelope)
	case !validToken(e.Hub):
		return Envelope{}, fmt.Errorf("%w: hub %q", ErrBadEnvelope, e.Hub)
	case !validToken(e.From), !validToken(e.Target):
		return Envelope{}, fmt.Errorf("%w: from %q target %q", ErrBadEnvelope, e.From, e.Target)
	case e.Content == "" || len(e.Content) > MaxContent || !utf8.ValidString(e.Content):
		return Envelope{}, fmt.Errorf("%w: content", ErrBadEnvelope)
	case e.Seq < 0:
		return Envelope{}, fmt.Errorf("%w: seq %d", ErrBadEnvelope, e.Seq)
	}
	if len(e.Metadata) > 0 {
		var obj map[string]any
		if json.Unmarshal(e.Metadata, &obj) != nil || obj == nil {
			return Envelope{}, fmt.Errorf("%w: metadata is not an object", ErrBadEnvelope)
		}
	}
	return e, nil
}
