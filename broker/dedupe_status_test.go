package broker_test

import (
	"fmt"
	"testing"

	"hm/broker/proto"
)

// TestDuplicateRepeatsFirstStatus: a duplicate (the same messageId, or the
// same sender, number and body) is not delivered again and its ACK repeats
// the first one's status with dedupe:true (SPEC §2, §5.2). A message handed
// to a listener was ACKed delivered.websocket, but a duplicate sent at once
// was answered accepted.unverified: the ledger records the hand-over only
// after the frame is written.
func TestDuplicateRepeatsFirstStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	builder := h.as("builder", true)
	arch := h.as("architect", false)
	for i := range 20 {
		id := fmt.Sprintf("first-%d", i)
		first := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "once " + id, MessageID: id})
		byID := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "once " + id, MessageID: id})
		byBody := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: fmt.Sprintf("(ARCH #%d): once %s", first.Seq, id)})
		for name, dup := range map[string]proto.Ack{"same messageId": byID, "same header and body": byBody} {
			if !first.OK || !dup.OK || !dup.Dedupe || dup.MessageID != id || dup.Seq != first.Seq || dup.Status != first.Status {
				t.Fatalf("%s: duplicate ACK %+v, want dedupe:true repeating the first ACK %+v", name, dup, first)
			}
		}
	}
	// Each was delivered once.
	for i := range 20 {
		if m := decode[proto.Message](t, nextOf(t, builder, proto.TypeMessage)); m.MessageID != fmt.Sprintf("first-%d", i) {
			t.Fatalf("message %d: got %s", i, m.MessageID)
		}
	}
}

// TestDuplicateBroadcastKeepsTargets: a broadcast's ACK names its targets
// (SPEC §5.2), and so does the ACK of its duplicate, which repeats the
// first one's; it used to have no targets at all.
func TestDuplicateBroadcastKeepsTargets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.as("builder", true)
	arch := h.as("architect", false)
	first := send(t, arch, proto.Frame{Type: proto.TypeBroadcast, Content: "standup", MessageID: "bc-dup"})
	dups := map[string]proto.Frame{
		"same messageId":       {Type: proto.TypeBroadcast, Content: "standup", MessageID: "bc-dup"},
		"same header and body": {Type: proto.TypeBroadcast, Content: fmt.Sprintf("(ARCH #%d): standup", first.Seq)},
		"send to all":          {Type: proto.TypeSend, Target: "all", Content: "standup", MessageID: "bc-dup"},
	}
	for name, f := range dups {
		dup := send(t, arch, f)
		if !first.OK || !dup.Dedupe || dup.MessageID != "bc-dup" || fmt.Sprint(dup.Targets) != "[builder oracle]" || fmt.Sprint(first.Targets) != "[builder oracle]" {
			t.Errorf("%s: duplicate ACK %+v, want dedupe:true with the first ACK's targets %v", name, dup, first.Targets)
		}
	}
}
