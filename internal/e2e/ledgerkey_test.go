package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/internal/ground/layout"
)

// TestCLIVerifyKeyed: plain SQL edits that passed `hm journal verify`
// before the chain was keyed and complete (issue 14) are caught and the
// first bad row named; a fake DECISION that reaches the briefing is among
// them; `hm journal checkpoint` exports a signed head and refuses to sign
// a tampered ledger; a garbage ledger key stops `hm up` with a clear error.
func TestCLIVerifyKeyed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--no-panes")
	for _, body := range []string{"DECISION: ship the parser", "second note", "third note"} {
		if r := run(t, root, []string{"SQUIDRUN_ROLE=architect"}, "hm-send", "builder", body); r.code != 0 {
			t.Fatalf("hm-send: %+v", r)
		}
	}
	h.stop()
	lay := layout.Layout{Root: root}
	if r := run(t, root, nil, "hm", "journal", "verify", "--checkpoint", lay.LedgerCheckpoint()); r.code != 0 || !strings.Contains(r.stdout, "checkpoint ok") {
		t.Fatalf("verify against the hub's checkpoint: %+v", r)
	}
	r := run(t, root, nil, "hm", "journal", "checkpoint")
	if r.code != 0 || !strings.Contains(r.stdout, `"mac"`) {
		t.Fatalf("hm journal checkpoint: %+v", r)
	}
	exported := filepath.Join(t.TempDir(), "kept-elsewhere.json")
	if err := os.WriteFile(exported, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, sql, want string
		briefing        string // left out of hm briefing after the edit (#33: reports build only from rows the chain covers)
	}{
		{"sender_role", "UPDATE comms_journal SET sender_role = 'oracle' WHERE row_id = 2", "(message_id ", ""},
		{"metadata", `UPDATE comms_journal SET metadata_json = '{"forged":true}' WHERE row_id = 1`, "hash mismatch", ""},
		{"fake DECISION", "INSERT INTO comms_signals(message_id, session_id, sender_role, ref, kind, text, at_ms) SELECT message_id, session_id, sender_role, 'ARCH #2', 'DECISION', 'deploy on friday', brokered_at_ms FROM comms_journal WHERE row_id = 2",
			"hash mismatch", "deploy on friday"},
		{"cut tail", "DELETE FROM comms_events WHERE event_id = (SELECT max(event_id) FROM comms_events); UPDATE kv SET value = (SELECT event_id || ':' || hash FROM comms_events ORDER BY event_id DESC LIMIT 1) WHERE key = 'chain_head'",
			"kv chain_head: not signed with the ledger key", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			croot := t.TempDir()
			if err := exec.Command("cp", "-a", lay.State(), croot).Run(); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(croot, layout.Dir, "runtime", "evidence-ledger.db")
			conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			if err := sqlitex.ExecuteScript(conn, tc.sql, nil); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			if tc.briefing != "" {
				if r := run(t, croot, nil, "hm", "briefing"); r.code != 0 || strings.Contains(r.stdout, tc.briefing) {
					t.Fatalf("the forged row reaches the briefing, or the briefing failed: %+v", r)
				}
			}
			r := run(t, croot, nil, "hm", "journal", "verify")
			if r.code != 1 || !strings.HasPrefix(r.stdout, "FAILED: ") || !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("verify after %s: %+v", tc.name, r)
			}
			if r := run(t, croot, nil, "hm", "journal", "checkpoint"); r.code != 1 || r.stdout != "" {
				t.Fatalf("checkpoint of a tampered ledger: %+v", r)
			}
		})
	}

	// The exported checkpoint holds while the ledger is intact.
	if r := run(t, root, nil, "hm", "journal", "verify", "--checkpoint", exported); r.code != 0 || !strings.Contains(r.stdout, "checkpoint ok") {
		t.Fatalf("verify against the exported checkpoint: %+v", r)
	}

	// A garbage key stops hm up, and nothing is changed.
	keyPath := lay.LedgerKey()
	good, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin, env := hmBinary(t, "hm")
	cmd := exec.CommandContext(ctx, bin, "up", "--port", "0", "--no-panes")
	cmd.Env, cmd.Dir = cleanEnv(root, env...), root
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ledger-key") || !strings.Contains(string(out), "want 64 hex characters") {
		t.Fatalf("hm up with a garbage key: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(keyPath); string(got) != "garbage\n" {
		t.Fatalf("the key file was replaced: %q", got)
	}
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 1 || !strings.Contains(r.stderr, "want 64 hex characters") {
		t.Fatalf("verify with a garbage key: %+v", r)
	}
	if err := os.WriteFile(keyPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify with the key restored: %+v", r)
	}
}
