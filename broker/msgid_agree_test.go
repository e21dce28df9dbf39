package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"hm/internal/ground/status"

	"hm/broker"
	"hm/internal/ground/msgid"
	"hm/triggers"
)

// TestMessageIDRuleShared: the hub (Submit) and trigger files (Write,
// ValidMessageID) accept exactly the ids msgid.Valid accepts. They used to
// disagree: the broker took "_x" and ":x", trigger files refused them.
func TestMessageIDRuleShared(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	ids := []string{"_x", ":x", "-x", ".x", "..", "x_", "x:y", "hm-1-abc", "a/b", "a b", "é", "",
		strings.Repeat("m", msgid.MaxLen), strings.Repeat("m", msgid.MaxLen+1)}
	for i, id := range ids {
		want := msgid.Valid(id)
		if id == "" {
			want = true // an empty id asks the hub (and Write) to make one
		}
		ack, err := h.b.Submit(context.Background(), broker.Submission{From: "architect", Target: "builder", Content: "id test " + itoa(i), MessageID: id})
		if hub := err == nil; hub != want {
			t.Errorf("%q: hub accepts=%v (ack %+v, err %v), want %v", id, hub, ack, err, want)
		} else if !want && ack.Status != string(status.CodeBadRequest) {
			t.Errorf("%q: refused with %q, want bad_request", id, ack.Status)
		}
		_, err = triggers.Write(dir, "builder", id, "hi")
		if file := !errors.Is(err, triggers.ErrBadName); file != want {
			t.Errorf("%q: trigger Write accepts=%v (err %v), want %v", id, file, err, want)
		}
		if id != "" && triggers.ValidMessageID(id) != want {
			t.Errorf("%q: triggers.ValidMessageID = %v, want %v", id, !want, want)
		}
	}
}
