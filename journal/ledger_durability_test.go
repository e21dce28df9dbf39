package journal

// Tests of the ledger's integrity and storage: the hash chain, tampering
// found by Verify, the size limit, read-only opening, file modes, reopening
// and surviving SIGKILL.

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestHashChain(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	for i := range 5 {
		id := fmt.Sprintf("m%d", i)
		if _, err := l.Append(ctx, msg(id, "builder", "architect", int64(i+1), "body "+id)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed}); err != nil {
			t.Fatal(err)
		}
	}
	key, err := LoadKey(filepath.Join(filepath.Dir(l.Path()), KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	prev := GenesisHash
	var n int64
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, "SELECT event_id, message_id, event, at_ms, detail_json, prev_hash, hash FROM comms_events ORDER BY event_id", &sqlitex.ExecOptions{
			ResultFunc: func(stmt *sqlite.Stmt) error {
				n++
				id := stmt.ColumnInt64(0)
				if id != n {
					return fmt.Errorf("event_id %d, want %d", id, n)
				}
				if stmt.ColumnText(5) != prev {
					return fmt.Errorf("event %d prev_hash %s, want %s", id, stmt.ColumnText(5), prev)
				}
				// Recompute independently with encoding/json over maps: the
				// row's fixed columns from the table, its changeable ones
				// from the detail.
				r, _, err := getMessage(conn, stmt.ColumnText(1))
				if err != nil {
					return err
				}
				dec := json.NewDecoder(strings.NewReader(stmt.ColumnText(4)))
				dec.UseNumber()
				var d map[string]any
				if err := dec.Decode(&d); err != nil {
					return err
				}
				rowMap := map[string]any{"ack_status": d["ack_status"], "attempt": d["attempt"], "body_bytes": r.BodyBytes, "body_hash": r.BodyHash,
					"brokered_at_ms": r.BrokeredAtMs, "channel": r.Channel, "direction": r.Direction, "error_code": d["error_code"], "header": r.Header,
					"message_id": r.MessageID, "metadata_json": r.MetadataJSON, "priority": r.Priority, "row_id": r.RowID, "sender_role": r.SenderRole,
					"sent_at_ms": r.SentAtMs, "seq": r.Seq, "session_id": r.SessionID, "status": d["status"], "target_role": r.TargetRole,
					"updated_at_ms": d["updated_at_ms"]}
				change := map[string]any{"obligation": nil, "obligation_closed": nil, "row": rowMap, "signals": []any{}, "signals_resolved": []any{}}
				canon, _ := json.Marshal(map[string]any{"event_id": id, "message_id": stmt.ColumnText(1), "event": stmt.ColumnText(2),
					"at_ms": stmt.ColumnInt64(3), "detail_json": stmt.ColumnText(4), "change": change})
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(prev))
				mac.Write(canon)
				if want := hex.EncodeToString(mac.Sum(nil)); stmt.ColumnText(6) != want {
					return fmt.Errorf("event %d hash %s, want %s over %s", id, stmt.ColumnText(6), want, canon)
				}
				prev = stmt.ColumnText(6)
				return nil
			}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Fatalf("%d events, want 10", n)
	}
	// The writer signs the head lazily (head.go); Checkpoint brings it to
	// the last event.
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	head, ok, err := l.KVGet(ctx, "chain_head")
	if err != nil || !ok || !strings.HasPrefix(head, "10:"+prev+":") {
		t.Fatalf("chain_head = %q %v %v, want 10:%s:<signature>", head, ok, err, prev)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("hm ledger chain head\x00" + "10:" + prev))
	if sig := hex.EncodeToString(mac.Sum(nil)); head != "10:"+prev+":"+sig {
		t.Fatalf("chain_head = %q, signature want %s", head, sig)
	}
}

func TestVerifyTampering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tamper    string
		wantFirst string
	}{
		{"body changed", "UPDATE comms_journal SET raw_body = 'forged' WHERE row_id = 2",
			"comms_journal row_id 2 (message_id m1): body changed"},
		{"body and body_hash changed", "UPDATE comms_journal SET raw_body = 'forged', body_hash = '" + sha256Hex("forged") + "' WHERE row_id = 3",
			"comms_events event_id 5 (message_id m2): hash mismatch"},
		{"body_hash column changed", "UPDATE comms_journal SET body_hash = 'x' WHERE row_id = 1",
			"comms_events event_id 1 (message_id m0): hash mismatch"},
		{"event deleted", "DELETE FROM comms_events WHERE event_id = 3",
			"comms_events event_id 4: event_id 3 missing"},
		{"events deleted", "DELETE FROM comms_events WHERE event_id IN (3, 4)",
			"comms_events event_id 5: event_ids 3..4 missing"},
		{"last event deleted", "DELETE FROM comms_events WHERE event_id = (SELECT max(event_id) FROM comms_events)",
			"comms_events: chain head records event_id 8 but the chain ends at event_id 7"},
		{"detail changed", `UPDATE comms_events SET detail_json = '{"status":"acked"}' WHERE event_id = 5`,
			"comms_events event_id 5 (message_id m2): hash mismatch"},
		{"time changed", "UPDATE comms_events SET at_ms = at_ms + 1 WHERE event_id = 2",
			"comms_events event_id 2 (message_id m0): hash mismatch"},
		{"event renumbered", "UPDATE comms_events SET event_id = 100 WHERE event_id = 8",
			"comms_events event_id 100: event_ids 8..99 missing"},
		{"prev_hash rewritten", "UPDATE comms_events SET prev_hash = '" + GenesisHash + "' WHERE event_id = 6",
			"comms_events event_id 6: prev_hash does not match event_id 5"},
		{"message row deleted", "DELETE FROM comms_journal WHERE row_id = 2",
			"comms_events event_id 3 (message_id m1): message row deleted"},
		{"status changed", "UPDATE comms_journal SET status = 'acked' WHERE row_id = 4",
			"comms_journal row_id 4 (message_id m3): state changed (row says acked/, events say routed/)"},
		{"ack status changed", "UPDATE comms_journal SET ack_status = 'delivered.verified' WHERE row_id = 1",
			"comms_journal row_id 1 (message_id m0): state changed"},
		{"brokered event renamed", "UPDATE comms_events SET event = 'other' WHERE event_id = 1",
			"comms_events event_id 1 (message_id m0): hash mismatch"},
		{"session count changed", "UPDATE comms_session_counts SET n = n + 1 WHERE status = 'routed'",
			`comms_session_counts session "app-session-1" status "routed" channel "ws" sender "oracle": counts 5 messages, the rows hold 4`},
		{"emptied group counted", "UPDATE comms_session_counts SET n = 1 WHERE status = 'brokered'",
			`comms_session_counts session "app-session-1" status "brokered" channel "ws" sender "oracle": counts 1 messages, the rows hold 0`},
		{"session counts deleted", "DELETE FROM comms_session_counts",
			`comms_session_counts session "app-session-1" status "routed" channel "ws" sender "oracle": counts 0 messages, the rows hold 4`},
		{"highest seq changed", "UPDATE comms_session_counts SET max_seq = 9 WHERE status = 'routed'",
			`comms_session_counts session "app-session-1" sender "oracle": highest seq 9, the rows say 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l := openAt(t, path, Options{})
			ctx := ctxT(t)
			for i := range 4 {
				id := fmt.Sprintf("m%d", i)
				if _, err := l.Append(ctx, msg(id, "oracle", "architect", int64(i+1), "finding "+id)); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed}); err != nil {
					t.Fatal(err)
				}
			}
			// Settled: the head names the last event (head.go).
			if _, err := l.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := l.Verify(ctx)
			if err != nil || !r.OK || r.Events != 8 || r.Messages != 4 || r.FirstBad != "" {
				t.Fatalf("untouched Verify = %+v, %v", r, err)
			}
			tamper(t, path, tt.tamper)
			r, err = l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || r.Problems == 0 {
				t.Fatalf("tampered ledger verified OK: %+v", r)
			}
			if !strings.HasPrefix(r.FirstBad, tt.wantFirst) {
				t.Fatalf("FirstBad = %q, want prefix %q", r.FirstBad, tt.wantFirst)
			}
		})
	}
}

// tamper edits the database behind the ledger's back with a plain conn
// (one statement; tamperScript runs several).
func tamper(t *testing.T, path, query string) {
	t.Helper()
	tamperScript(t, path, query)
}

func TestMaxBytes(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{MaxBytes: 256 << 10, FTSInterval: time.Hour})
	ctx := ctxT(t)
	big := strings.Repeat("0123456789abcdef", 512) // 8 KiB
	var full error
	n := 0
	for ; n < 200; n++ {
		if _, err := l.Append(ctx, msg(fmt.Sprintf("big%d", n), "builder", "architect", int64(n+1), big)); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, ErrUnavailable) {
		t.Fatalf("after %d appends: %v, want ErrUnavailable", n, full)
	}
	if n == 0 {
		t.Fatal("no append fit under MaxBytes")
	}
	failedID := fmt.Sprintf("big%d", n)
	if _, err := l.Get(ctx, failedID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("failed append left a row: %v", err)
	}
	if err := l.KVSet(ctx, "k", big); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("KVSet on a full ledger = %v, want ErrUnavailable", err)
	}
	if err := l.SetMaxBytes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, msg(failedID, "builder", "architect", int64(n+1), big)); err != nil {
		t.Fatalf("append after SetMaxBytes(0): %v", err)
	}
	if err := l.FlushFTS(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK || r.Messages != int64(n+1) {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	setup, err := Open(context.Background(), path, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Append(context.Background(), msg("ro", "architect", "oracle", 1, "read me")); err != nil {
		t.Fatal(err)
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		prep func(t *testing.T)
		opts Options
	}{
		{"read-only option", func(t *testing.T) {}, Options{ReadOnly: true}},
		{"read-only file", func(t *testing.T) {
			if os.Geteuid() == 0 {
				// Root ignores file permissions but not the immutable attribute.
				if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
					t.Fatalf("as root the file is made read-only with chattr +i, which needs chattr (Debian package e2fsprogs) and a temp dir on a file system with the i attribute such as ext4 (set TMPDIR): %v %s", err, out)
				}
				t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
				return
			}
			if err := os.Chmod(path, 0o400); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(path, 0o600) })
		}, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prep(t)
			l := openAt(t, path, tt.opts)
			ctx := ctxT(t)
			if m, err := l.Get(ctx, "ro"); err != nil || m.RawBody != "(ARCH #1): read me" {
				t.Fatalf("Get = %+v, %v", m, err)
			}
			if _, err := l.Append(ctx, msg("new", "architect", "oracle", 2, "x")); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Append = %v, want ErrUnavailable", err)
			}
			if _, err := l.Advance(ctx, Change{MessageID: "ro", Status: status.Routed}); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Advance = %v, want ErrUnavailable", err)
			}
			if r, err := l.Verify(ctx); err != nil || !r.OK {
				t.Fatalf("Verify = %+v, %v", r, err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "missing.db"), Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only Open of a missing file succeeded")
	}
}

func TestFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "runtime")
	path := filepath.Join(dir, "evidence-ledger.db")
	l := openAt(t, path, Options{})
	if _, err := l.Append(ctxT(t), msg("x", "architect", "oracle", 1, "x")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
	var mode, sync string
	if err := l.Read(ctxT(t), func(conn *sqlite.Conn) error {
		if err := sqlitex.Execute(conn, "PRAGMA journal_mode", &sqlitex.ExecOptions{ResultFunc: func(s *sqlite.Stmt) error { mode = s.ColumnText(0); return nil }}); err != nil {
			return err
		}
		return nil
	}); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	_ = sync
}

func TestReopenContinuesChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx := ctxT(t)
	for round := range 3 {
		l, err := Open(ctx, path, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			id := fmt.Sprintf("r%d-%d", round, i)
			if _, err := l.Append(ctx, msg(id, "architect", "builder", int64(round*3+i+1), id)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := l.Verify(ctx)
		if err != nil || !r.OK || r.Events != int64(3*(round+1)) {
			t.Fatalf("round %d Verify = %+v, %v", round, r, err)
		}
		hits, err := l.Search(ctx, fmt.Sprintf(`"r%d"`, max(0, round-1)), 10)
		if err != nil || (round > 0 && len(hits) != 3) {
			t.Fatalf("round %d: rows of the previous run not searchable after Close: %v %v", round, hits, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
}

// TestKillSafety re-executes the test binary as a child that commits and is
// then SIGKILLed without Close; everything acknowledged must survive.
func TestKillSafety(t *testing.T) {
	t.Parallel()
	if path := os.Getenv("HM_JOURNAL_KILL_CHILD"); path != "" {
		killChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx := ctxT(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillSafety$")
	cmd.Env = append(os.Environ(), "HM_JOURNAL_KILL_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	committed := false
	for sc.Scan() {
		if sc.Text() == "committed" {
			committed = true
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !committed {
		t.Fatal("child never reported its commits")
	}
	l := openAt(t, path, Options{})
	for i := range 20 {
		if _, err := l.Get(ctx, fmt.Sprintf("k%d", i)); err != nil {
			t.Fatalf("committed message k%d lost: %v", i, err)
		}
	}
	if m, err := l.Get(ctx, "k0"); err != nil || m.Status != status.Acked {
		t.Fatalf("committed Advance lost: %+v %v", m, err)
	}
	if v, ok, _ := l.KVGet(ctx, "offset"); !ok || v != "7" {
		t.Fatalf("committed KVSet lost: %q %v", v, ok)
	}
	r, err := l.Verify(ctx)
	if err != nil || !r.OK || r.Messages != 20 || r.Events != 21 {
		t.Fatalf("Verify after crash = %+v, %v", r, err)
	}
	// The crash left bodies unindexed; indexing catches up after reopen.
	poll.For(t, 10*time.Second, func() error {
		hits, err := l.Search(ctx, "crashy", 50)
		return poll.Want(err == nil && len(hits) == 20, "search to catch up after crash")
	})
}

func killChild(path string) {
	ctx := context.Background()
	l, err := Open(ctx, path, Options{FTSInterval: time.Hour})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	for i := range 20 {
		if _, err := l.Append(ctx, msg(fmt.Sprintf("k%d", i), "builder", "architect", int64(i+1), "crashy body")); err != nil {
			fmt.Fprintln(os.Stderr, "child append:", err)
			os.Exit(3)
		}
	}
	if _, err := l.Advance(ctx, Change{MessageID: "k0", Status: status.Acked}); err != nil {
		os.Exit(3)
	}
	if err := l.KVSet(ctx, "offset", "7"); err != nil {
		os.Exit(3)
	}
	fmt.Println("committed")
	time.Sleep(time.Minute) // killed here, never closed
	os.Exit(4)
}
