package broker_test

import (
	"testing"

	"hm/broker/proto"
	"hm/internal/ground/status"
)

// TestNonObjectFrameIsBadJSON: a frame must be a JSON object (SPEC §5.2);
// anything else is bad_json, before and after register, and the connection
// stays usable. `null` used to decode as an empty frame and get
// unknown_type.
func TestNonObjectFrameIsBadJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inputs := []string{`null`, ` null `, "\tnull\n", `true`, `1`, `"frame"`, `[{"type":"heartbeat"}]`, `{"type":"heartbeat"} {}`, `{"type":`, ``}
	for _, registered := range []bool{false, true} {
		c := h.dial()
		if registered {
			if _, err := c.Register(ctxT(t), "oracle", h.tokens.Issue("oracle"), false); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range inputs {
			if err := c.WriteText(ctxT(t), []byte(in)); err != nil {
				t.Fatal(err)
			}
			got := answersTo(t, c)
			if len(got) != 1 || got[0].Type != proto.TypeError || got[0].Code != string(status.CodeBadJSON) {
				t.Errorf("registered=%v, frame %q: got %s, want one bad_json error", registered, in, frames(got))
			}
		}
	}
}
