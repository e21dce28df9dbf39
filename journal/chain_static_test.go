package journal

import (
	"strconv"
	"strings"
	"testing"

	"hm/internal/ground/status"
)

// The writer's encoded unchanging columns (rowStatic) give the canonical
// row Verify encodes from scratch, whatever the row's state, and a copy
// made from another row is not used.
func TestCanonicalRowStatic(t *testing.T) {
	base := Message{RowID: 7, MessageID: "hm-1-abc", SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
		Channel: "ws", Direction: DirectionOutbound, Seq: 3, Header: "ARCH", Priority: "normal", SentAtMs: 5, BrokeredAtMs: 6,
		BodyHash: "00ff", BodyBytes: 4, MetadataJSON: `{"k":"v\u2028"}`, Status: status.Brokered, UpdatedAtMs: 6}
	escaped := base
	escaped.Header, escaped.TargetRole, escaped.SessionID = "A\"B\\C\n", "t\x01r", "s\xffx"
	acked := base
	acked.Status, acked.AckStatus, acked.Attempt, acked.UpdatedAtMs = status.Acked, status.DeliveredVerified, 2, 9
	other := base
	other.RowID = 8
	otherID := escaped
	otherID.MessageID = "hm-2-def"
	tests := []struct {
		name   string
		row    Message
		static *rowStatic
	}{
		{"own static", base, newRowStatic(&base)},
		{"escaped columns", escaped, newRowStatic(&escaped)},
		{"state changed since", acked, newRowStatic(&base)},
		{"another row's static", other, newRowStatic(&base)},
		{"another id's static", base, newRowStatic(&otherID)},
		{"none", base, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendCanonicalRow(nil, &tt.row, tt.static))
			want := string(appendCanonicalRow(nil, &tt.row, nil)) // as Verify encodes it
			if got != want {
				t.Fatalf("with static:\n%s\nencoded now:\n%s", got, want)
			}
			if !strings.Contains(want, `"row_id":`+strconv.FormatInt(tt.row.RowID, 10)) ||
				!strings.HasSuffix(want, `"updated_at_ms":`+strconv.FormatInt(tt.row.UpdatedAtMs, 10)+"}") {
				t.Fatalf("canonical row %s lacks its row_id or state", want)
			}
		})
	}
}
