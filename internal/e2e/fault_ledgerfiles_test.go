package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
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

// TestFaultLedgerRolledBack puts the ledger back to an older copy of
// itself (every row in it genuinely signed) after the hub ACKed more:
// `hm journal verify` fails naming the missing events, against the signed
// head the hub keeps in handoffs/; a hub started on that ledger says so,
// keeps the head aside instead of overwriting it, and verify still fails
// after it wrote more, until the kept head is removed. Before the fix
// verify said ok.
func TestFaultLedgerRolledBack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lay := layout.Layout{Root: root}
	sendN := func(h *hubProc, prefix string, n int) {
		t.Helper()
		op := dialAs(t, h, "user", false)
		ctx := tctx(t, time.Minute)
		for i := range n {
			id := fmt.Sprintf("%s-%02d", prefix, i)
			ack, _, err := op.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", MessageID: id, Content: id})
			if err != nil || !ack.OK {
				t.Fatalf("send %s: %+v %v", id, ack, err)
			}
		}
		op.CloseNow()
	}
	h := startHub(t, root, "--no-panes", "--rate-limit", "0")
	sendN(h, "kept", 10)
	h.stop()
	old, err := os.ReadFile(lay.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	h = startHub(t, root, "--no-panes", "--rate-limit", "0")
	sendN(h, "lost", 10)
	h.stop()
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(lay.Ledger() + s)
	}
	if err := os.WriteFile(lay.Ledger(), old, 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, root, nil, "hm", "journal", "verify")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "FAILED: comms_events: the chain ends at event_id") ||
		!strings.Contains(r.stdout, "but the last signed head (") || !strings.Contains(r.stdout, "are missing") {
		t.Fatalf("verify of the rolled-back ledger: %+v", r)
	}

	h = startHub(t, root, "--no-panes", "--rate-limit", "0")
	sendN(h, "again", 30)
	h.stop()
	if log, _ := os.ReadFile(lay.HubLog()); !strings.Contains(string(log), "THE LEDGER WENT BACK IN TIME") {
		t.Fatalf("the hub started on a rolled-back ledger without saying so:\n%s", hubLog(root))
	}
	r = run(t, root, nil, "hm", "journal", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "head kept aside when the hub started on a ledger without it") {
		t.Fatalf("verify after the hub wrote more on the rolled-back ledger: %+v", r)
	}
	aside, _ := filepath.Glob(filepath.Join(lay.Handoffs(), "ledger-checkpoint.rolled-back-*.json"))
	if len(aside) != 1 {
		t.Fatalf("kept heads: %v", aside)
	}
	if err := os.Remove(aside[0]); err != nil {
		t.Fatal(err)
	}
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify once the kept head is removed: %+v", r)
	}
}
