package hub_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
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

// TestStatusObligationDelivery: each open obligation hm status lists
// carries how far its [ACK REQUIRED] message got: the protocol's stage
// name (as --json shows it) and the plain words with what would make it
// "seen by the agent" (journal.Message.Delivery and ToVerify).
func TestStatusObligationDelivery(t *testing.T) {
	t.Parallel()
	th := startHubAt(t, t.TempDir(), hubConfig{opts: func(o *hub.Options) { o.NoPanes = true }})
	th.as("builder", true) // a listener: the message reaches it over the socket
	send(t, th.as("architect", false), proto.Frame{Target: "builder", Content: "[ACK REQUIRED] review the parser", MessageID: "ask-1"})
	want := hub.ObligationStatus{Stage: status.DeliveredWebSocket, Delivery: "received by its listener",
		ToVerify: "seen by the agent once the listener acknowledges it"}
	poll.For(t, 20*time.Second, func() error {
		obs := th.h.Snapshot(ctxT(t)).Obligations
		if len(obs) != 1 {
			return fmt.Errorf("status lists %d obligations, want 1", len(obs))
		}
		got := obs[0]
		return poll.Want(got.MessageID == "ask-1" && got.Stage == want.Stage && got.Delivery == want.Delivery && got.ToVerify == want.ToVerify,
			"obligation %+v, want stage %q, delivery %q, toVerify %q", got, want.Stage, want.Delivery, want.ToVerify)
	})
	data, err := json.Marshal(th.h.Snapshot(ctxT(t)).Obligations[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"stage":"delivered.websocket"`) || !strings.Contains(string(data), `"messageId":"ask-1"`) {
		t.Errorf("--json obligation %s: want the protocol's stage name beside the view's fields", data)
	}
}
