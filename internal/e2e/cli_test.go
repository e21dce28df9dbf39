package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"hm/broker/proto"
	"hm/internal/ground/layout"
)

// TestCLICommands drives the ledger and operator commands against a real
// hub and the built binaries.
func TestCLICommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := startHub(t, root, "--no-panes")
	builder := listen(t, h, "builder")

	// A delivered message, then a receipt from a CLI hook's JSON payload.
	r := run(t, root, []string{"SQUIDRUN_ROLE=architect"}, "hm-send", "builder", "DECISION: ship the parser", "--json")
	var ack proto.Ack
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ack) != nil || !ack.OK {
		t.Fatalf("hm-send: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := builder.Next(ctx); err != nil {
		t.Fatal(err)
	}
	hook := fmt.Sprintf(`{"session_id":"x","prompt":"[AGENT MSG - reply via hm-send] (ARCH #1): DECISION: ship the parser\n[hm:%s]"}`, ack.MessageID)
	r = runStdin(t, root, hook, "hm", "receipt")
	if r.code != 0 || !strings.Contains(r.stdout, ack.MessageID+" delivered.verified") {
		t.Fatalf("hm receipt: %+v", r)
	}
	if r := runStdin(t, root, `{"prompt":"typed by a human"}`, "hm", "receipt"); r.code != 0 || r.stdout != "" {
		t.Fatalf("receipt without a marker: %+v", r)
	}
	if r := runStdin(t, root, "[hm:never-sent]", "hm", "receipt"); r.code != 1 {
		t.Fatalf("receipt for an unknown id: %+v", r)
	}

	// Ledger views.
	r = run(t, root, nil, "hm", "comms", "history", "--last", "5", "--json")
	var rows []map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != 1 || rows[0]["status"] != "acked" {
		t.Fatalf("history: %+v", r)
	}
	if r := run(t, root, nil, "hm", "comms", "history"); r.code != 0 || !strings.Contains(r.stdout, "ship the parser") {
		t.Fatalf("history table: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = run(t, root, nil, "hm", "comms", "search", "parser", "--json")
		if r.code == 0 && strings.Contains(r.stdout, ack.MessageID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search never found the message: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := run(t, root, nil, "hm", "comms", "search", `"unclosed`); r.code != 2 || !strings.Contains(r.stderr, "malformed query") {
		t.Fatalf("malformed search: %+v", r)
	}
	if r := run(t, root, nil, "hm", "briefing"); r.code != 0 || !strings.Contains(r.stdout, "Briefing") {
		t.Fatalf("briefing: %+v", r)
	}
	r = run(t, root, nil, "hm", "handoff")
	if r.code != 0 || !strings.Contains(r.stdout, "Coverage") || !strings.Contains(r.stdout, "ship the parser") {
		t.Fatalf("handoff: %+v", r)
	}
	if data, err := os.ReadFile(layout.Layout{Root: root}.Session()); err != nil || string(data) != r.stdout {
		t.Fatalf("handoff file differs from what was printed: %v", err)
	}
	r = run(t, root, nil, "hm", "status", "--json")
	var st map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || st["telegram"].(map[string]any)["state"] != "off" {
		t.Fatalf("status: %+v", r)
	}
	if r := run(t, root, nil, "hm", "doctor"); r.code != 0 || !strings.Contains(r.stdout, "chain verified") {
		t.Fatalf("doctor: %+v", r)
	}
	if r := run(t, root, []string{"SQUIDRUN_ROLE=architect"}, "hm-bg", "list"); r.code != 1 || !strings.Contains(r.stderr, "slot_unavailable") {
		t.Fatalf("hm-bg with --no-panes: %+v", r)
	}
	if r := run(t, root, nil, "hm-bg", "launch"); r.code != 2 {
		t.Fatalf("hm-bg usage: %+v", r)
	}
	if r := run(t, root, nil, "hm", "journal", "verify"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("verify: %+v", r)
	}
	h.stop()
	if r := run(t, root, nil, "hm", "status"); r.code != 1 || !strings.Contains(r.stdout, "not running") {
		t.Fatalf("status with the hub down: %+v", r)
	}

	// Tampering with plain SQL is caught and the row named.
	db := filepath.Join(root, ".squidrun", "runtime", "evidence-ledger.db")
	conn, err := sqlite.OpenConn(db, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.ExecuteTransient(conn, "UPDATE comms_journal SET raw_body = 'DECISION: ship nothing' WHERE message_id = ?", &sqlitex.ExecOptions{Args: []any{ack.MessageID}}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	r = run(t, root, nil, "hm", "journal", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, ack.MessageID) {
		t.Fatalf("verify after tampering: %+v", r)
	}
}

// TestCommsTailFollow: `hm comms tail -f` prints ledger changes live.
func TestCommsTailFollow(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	startHub(t, root, "--no-panes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin, env := hmBinary(t, "hm")
	cmd := exec.CommandContext(ctx, bin, "comms", "tail", "-f")
	cmd.Env, cmd.Dir = cleanEnv(root, env...), root
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Keep sending until tail (which subscribes after printing history)
	// shows one of them.
	for i := 0; ; i++ {
		id := fmt.Sprintf("tail-%d", i)
		if r := run(t, root, []string{"SQUIDRUN_ROLE=architect"}, "hm-send", "oracle", "watch this", "--message-id", id); r.code != 0 {
			t.Fatalf("hm-send: %+v", r)
		}
		select {
		case l, ok := <-lines:
			for ok {
				if strings.Contains(l, "brokered") && strings.Contains(l, "tail-") && strings.Contains(l, "watch this") {
					return
				}
				select {
				case l, ok = <-lines:
				case <-time.After(300 * time.Millisecond):
					ok = false
				}
			}
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("tail -f never showed a sent message\n%s", hubLog(root))
		}
	}
}
