package hub_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
)

// TestStatusShowsLedgerGone: hm status reports the ledger's error once its
// file is deleted under the running hub. Before the fix the status had no
// ledger field and the hub went on as if nothing happened.
func TestStatusShowsLedgerGone(t *testing.T) {
	th := startHub(t, hubConfig{})
	if st := th.h.Snapshot(context.Background()).Ledger; !st.OK || st.Error != "" || st.Path != th.h.Layout.Ledger() {
		t.Fatalf("status ledger = %+v, want ok at %s", st, th.h.Layout.Ledger())
	}
	if err := os.Remove(th.h.Layout.Ledger()); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		st := th.h.Snapshot(context.Background()).Ledger
		return poll.Want(!st.OK && strings.Contains(st.Error, "was deleted") && strings.Contains(st.Error, "journal_unavailable"), "status ledger = %+v", st)
	})
}
