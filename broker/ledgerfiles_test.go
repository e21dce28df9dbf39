package broker_test

import (
	"fmt"
	"os"
	"testing"

	"hm/broker/proto"
	"hm/internal/status"
)

// TestLedgerFileDeletedUnderHub: once the ledger's database or WAL is
// deleted or replaced under the running hub, every send is refused
// journal_unavailable and nothing more is ACKed. Before the fix all of
// them were ACKed into the deleted file and vanished.
func TestLedgerFileDeletedUnderHub(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		suffix string
		change func(path string) error
	}{
		{"database deleted", "", os.Remove},
		{"WAL deleted", "-wal", os.Remove},
		{"database replaced", "", func(p string) error {
			if err := os.WriteFile(p+".tmp", nil, 0o600); err != nil {
				return err
			}
			return os.Rename(p+".tmp", p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withPanes("builder"))
			arch := h.as("architect", false)
			if ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: "before"}); !ack.OK {
				t.Fatalf("first send refused: %+v", ack)
			}
			if err := tc.change(h.dbPath + tc.suffix); err != nil {
				t.Fatal(err)
			}
			acked := 0
			for i := range 50 {
				ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: fmt.Sprintf("after %d", i)})
				if ack.OK {
					acked++
					continue
				}
				if ack.Error == nil || *ack.Error != string(status.CodeJournalUnavailable) {
					t.Fatalf("send %d refused with %v, want %s", i, ack.Error, status.CodeJournalUnavailable)
				}
			}
			if acked > 0 {
				t.Fatalf("%d of 50 sends were ACKed after the ledger file was %s", acked, tc.name)
			}
			if h.panes.count("builder") != 1 {
				t.Fatalf("builder got %d messages, want only the one before", h.panes.count("builder"))
			}
			if err := h.ledger.Health(); err == nil {
				t.Fatal("Health() is nil after the ledger file changed")
			}
		})
	}
}
