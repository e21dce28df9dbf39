package hub_test

import (
	"log/slog"
	"os"
	"testing"

	"hm/internal/hub"
	"hm/internal/layout"
)

// TestRefusedLedgerKeepsSession: a hub that cannot open its ledger (here a
// garbage ledger key) does not start, and the session counter does not
// move, so the next hub that does start takes the next session, not one
// after a gap.
func TestRefusedLedgerKeepsSession(t *testing.T) {
	t.Parallel()
	lay := layout.Layout{Root: t.TempDir()}
	if err := lay.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.LedgerKey(), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := hub.Run(t.Context(), hub.Options{Layout: lay, Port: 0, NoPanes: true, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if err == nil {
		t.Fatal("a hub with a garbage ledger key started")
	}
	if st, rerr := lay.ReadAppStatus(); rerr != nil || st.Session != 0 {
		t.Fatalf("a hub refused with %q moved the session counter: %+v, %v", err, st, rerr)
	}
}
