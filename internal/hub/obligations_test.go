package hub_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/hub"
)

// TestObligationsAgreeAcrossRestarts: hm status (the hub's snapshot, which
// the cockpit shows too), the status query an agent or the cockpit asks
// for a role, and the startup briefing list the same open obligations,
// after a restart and a restart later (issue #34: after a restart the
// cockpit said "none open" while the briefing listed one owed).
func TestObligationsAgreeAcrossRestarts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	noPanes := hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }}
	th := startHubAt(t, root, noPanes)
	arch := th.as("architect", false)
	send(t, arch, proto.Frame{Target: "builder", Content: "[ACK REQUIRED] review the parser", MessageID: "ask-1"})
	th.stop()

	for _, tc := range []struct {
		session int
		want    int // open obligations listed
	}{
		{2, 1}, // carried from session 1: no reply can close it now
		{3, 0}, // a restart later it is history
	} {
		th := startHubAt(t, root, noPanes)
		if th.h.Session != tc.session {
			t.Fatalf("session %d, want %d", th.h.Session, tc.session)
		}
		ctx := ctxT(t)
		snap := th.h.Snapshot(ctx)
		payload, _ := json.Marshal(proto.StatusQuery{Role: "builder"})
		res, err := th.h.Broker.Query(ctx, broker.Identity{Role: "user", Operator: true}, proto.QueryStatus, payload)
		if err != nil {
			t.Fatal(err)
		}
		owed := res.(proto.StatusResult).Obligations
		data, err := os.ReadFile(th.h.Layout.Briefing())
		if err != nil {
			t.Fatal(err)
		}
		_, sec, _ := strings.Cut(string(data), "## Open Obligations")
		sec, _, _ = strings.Cut(sec, "\n## ")
		inBriefing := strings.Count(sec, "review the parser")
		if len(snap.Obligations) != tc.want || len(owed) != tc.want || inBriefing != tc.want {
			t.Errorf("session %d: status lists %d, builder's status query %d, the briefing %d open obligations; want %d in each",
				tc.session, len(snap.Obligations), len(owed), inBriefing, tc.want)
		}
		if tc.want > 0 && len(snap.Obligations) > 0 && len(owed) > 0 && (snap.Obligations[0].MessageID != "ask-1" || snap.Obligations[0].SessionID != "app-session-1" || owed[0].MessageID != "ask-1") {
			t.Errorf("session %d: status %+v, query %+v; want ask-1 of app-session-1", tc.session, snap.Obligations, owed)
		}
		// The session leaves a row, as a hub with panes does with its
		// session lines.
		send(t, th.as("architect", false), proto.Frame{Target: "oracle", Content: "plain note"})
		th.stop()
	}
}
