package broker_test

import (
	"testing"

	"hm/broker/proto"
	"hm/internal/ground/status"
)

// TestDeliveryCheckQueuedAckStatus: delivery-check answers with the
// message's status and ackStatus (SPEC §5.2). A message committed and
// queued for a role with no listener yet was ACKed accepted.unverified,
// but its delivery-check had no ackStatus at all (the ledger row's was
// empty); it now says accepted.unverified, as the ACK did.
func TestDeliveryCheckQueuedAckStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	arch := h.as("architect", false)
	ack := send(t, arch, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "when you are back", MessageID: "queued-1"})
	if !ack.OK || ack.Stage() != status.AcceptedUnverified {
		t.Fatalf("ack = %+v", ack)
	}
	for _, who := range []string{"architect", "builder", "user"} {
		c := arch
		if who != "architect" {
			c = h.as(who, false)
		}
		var dc proto.DeliveryResult
		if err := c.Request(ctxT(t), proto.Frame{Type: proto.TypeDeliveryCheck, RequestID: "dc-" + who, MessageID: "queued-1"}, proto.TypeDeliveryCheckResult, &dc); err != nil {
			t.Fatal(err)
		}
		if !dc.Known || dc.RequestID != "dc-"+who || dc.Status != status.Brokered || dc.AckStatus != status.AcceptedUnverified {
			t.Errorf("%s: delivery-check = %+v, want known, brokered, accepted.unverified", who, dc)
		}
	}
}
