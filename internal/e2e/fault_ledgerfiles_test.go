package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/layout"
	"hm/internal/poll"
)

// TestFaultLedgerFileDeleted deletes the ledger's -wal (or its database)
// while the hub runs, sends more, kills the hub with -9 and restarts it:
// every message ACKed before and after the deletion is in the ledger and
// verify says ok. Idle, the hub notices by itself and re-creates the files
// before any write. Before the fix the messages the WAL held were gone
// after the restart (49 of 50 in the report) and verify still said ok.
func TestFaultLedgerFileDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, suffix string
		after        int // sends after the deletion (0: the hub is idle)
	}{
		{"wal-deleted", "-wal", 50},
		{"wal-deleted-idle", "-wal", 0},
		{"db-deleted", "", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			lay := layout.Layout{Root: root}
			h := startHub(t, root, "--no-panes", "--rate-limit", "0")
			op := dialAs(t, h, "user", false)
			ctx := tctx(t, 2*time.Minute)
			var acked []string
			send := func(id string) {
				t.Helper()
				ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: id})
				if err != nil || !ack.OK {
					t.Fatalf("send %s after the %s: %+v %v\n%s", id, tc.name, ack, err, hubLog(root))
				}
				acked = append(acked, id)
			}
			for i := range 50 {
				send(fmt.Sprintf("before-%02d", i))
			}
			if err := os.Remove(lay.Ledger() + tc.suffix); err != nil {
				t.Fatal(err)
			}
			for i := range tc.after {
				send(fmt.Sprintf("after-%02d", i))
			}
			if tc.after == 0 {
				poll.For(t, 30*time.Second, func() error {
					return poll.Want(strings.Contains(hubLog(root), "re-created it under its name"), "the hub did not re-create the ledger file")
				})
			}
			h.kill()
			h2 := startHub(t, root, "--no-panes")
			h2.stop()
			got := ledgerAt(t, root, acked)
			if len(got) != len(acked) {
				t.Fatalf("%d of %d ACKed messages in the ledger after kill -9 and restart\n%s", len(got), len(acked), hubLog(root))
			}
			if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 {
				t.Fatalf("hm journal verify after the re-created ledger: %+v", r)
			}
		})
	}
}
