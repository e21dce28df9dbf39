package broker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/journal"
)

// TestLedgerFileDeletedUnderHub: once the ledger's database or WAL is
// deleted or replaced under the running hub, the ledger re-creates its
// files, so every send ACKed, before or after, is in the files a restarted
// hub opens and is delivered once. Before the fix the sends after it were
// refused, and those before it that only the WAL held were gone.
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
			var ids []string
			sendOK := func(content string) {
				t.Helper()
				ack := send(t, arch, proto.Frame{Type: "send", Target: "builder", Content: content})
				if !ack.OK {
					t.Fatalf("send %q after the %s refused: %+v", content, tc.name, ack)
				}
				ids = append(ids, ack.MessageID)
			}
			sendOK("before")
			if err := tc.change(h.dbPath + tc.suffix); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				sendOK(fmt.Sprintf("after %d", i))
			}
			poll.For(t, 30*time.Second, func() error {
				n := h.panes.count("builder")
				return poll.Want(n == len(ids), "builder got %d messages, want %d", n, len(ids))
			})
			if err := h.ledger.Health(); err != nil {
				t.Fatalf("Health() after the files were re-created: %v", err)
			}
			l, err := journal.Open(context.Background(), h.dbPath, journal.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for _, id := range ids {
				if _, err := l.Get(context.Background(), id); err != nil {
					t.Errorf("ACKed %s is not in the ledger under its name: %v", id, err)
				}
			}
		})
	}
}
