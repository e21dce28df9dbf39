package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
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
