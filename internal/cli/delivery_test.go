package cli

import (
	"strings"
	"testing"

	"hm/internal/ground/status"
	"hm/journal"
)

// TestHistoryPlainDelivery: hm comms history says how far each message got
// in the plain words of status.PlainStages, a failure with its code, and
// what would make the rest seen by the agent (issue #34 item 2). Golden:
// testdata/delivery/history.golden (-update rewrites it).
func TestHistoryPlainDelivery(t *testing.T) {
	t.Parallel()
	row := func(seq int64, st status.Status, ack status.Stage, code status.Code) journal.Message {
		return journal.Message{MessageID: "m", SessionID: "app-session-1", SenderRole: "builder", TargetRole: "architect",
			Seq: seq, Status: st, AckStatus: ack, ErrorCode: code, BrokeredAtMs: 1_700_000_000_000, RawBody: "(BUILDER #1): tests pass"}
	}
	var b strings.Builder
	printRows(&b, []journal.Message{
		row(1, status.Routed, status.AcceptedUnverified, ""),
		row(2, status.Routed, status.Typed, ""),
		row(3, status.Routed, status.Submitted, ""),
		row(4, status.Routed, status.DeliveredWebSocket, ""),
		row(5, status.Acked, status.DeliveredVerified, ""),
		row(6, status.Failed, status.StageNone, status.CodePaneFailed),
	})
	checkGolden(t, "testdata/delivery/history.golden", b.String())
}
