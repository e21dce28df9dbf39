package proto

import (
	"encoding/json"
	"os"
	"testing"

	"hm/internal/ground/status"
)

// TestJournalEventGolden: a journal-event frame's JSON is the golden one
// (testdata/journal-event.json): the ledger's column names, as SPEC §5
// and docs/protocol.md show the frame, and as the untyped row had them.
func TestJournalEventGolden(t *testing.T) {
	ev := JournalEvent{Type: TypeJournalEvent, Row: EventRow{
		EventID: 7, Event: status.EventSubmitted, AtMs: 1700000000123,
		Detail:    json.RawMessage(`{"pane":"builder","proven":true}`),
		MessageID: "hm-1", SessionID: "app-session-3", SenderRole: "architect", TargetRole: "builder",
		Channel: "ws", Seq: 4, Header: "ARCH", Priority: "urgent", RawBody: "(ARCH #4): [URGENT] go",
		Status: status.Routed, AckStatus: status.Submitted, ErrorCode: "", BrokeredAtMs: 1700000000001,
		Tags: []string{"[URGENT]"},
	}}
	got, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/journal-event.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Fatalf("journal-event frame:\n%s\nwant (testdata/journal-event.json):\n%s", got, want)
	}
	var back JournalEvent
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(back, "", "  ")
	if err != nil || string(again) != string(got) {
		t.Fatalf("decoded and encoded again:\n%s (%v)\nwant:\n%s", again, err, got)
	}
}
