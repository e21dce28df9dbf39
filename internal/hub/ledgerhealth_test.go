package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestStatusShowsLedgerGone: hm status reports the ledger's error while its
// file, deleted under the running hub, cannot be re-created (here the name
// of the copy is taken), and ok again once the ledger re-created it. Before
// the fix the status had no ledger field and the hub went on as if nothing
// happened.
func TestStatusShowsLedgerGone(t *testing.T) {
	th := startHub(t, hubConfig{})
	if st := th.h.Snapshot(context.Background()).Ledger; !st.OK || st.Error != "" || st.Path != th.h.Layout.Ledger() {
		t.Fatalf("status ledger = %+v, want ok at %s", st, th.h.Layout.Ledger())
	}
	blocker := th.h.Layout.Ledger() + ".recovering"
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(th.h.Layout.Ledger()); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		st := th.h.Snapshot(context.Background()).Ledger
		return poll.Want(!st.OK && strings.Contains(st.Error, "was deleted") && strings.Contains(st.Error, "journal_unavailable"), "status ledger = %+v", st)
	})
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		st := th.h.Snapshot(context.Background()).Ledger
		return poll.Want(st.OK && st.Error == "", "status ledger after the file could be re-created = %+v", st)
	})
}
