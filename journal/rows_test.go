package journal

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// otherConn opens a second connection to l's file, as another program
// (a SquidRun tool, an operator's sqlite3) would.
func otherConn(t *testing.T, l *Ledger) *sqlite.Conn {
	t.Helper()
	conn, err := sqlite.OpenConn(l.Path(), sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := sqlitex.ExecuteTransient(conn, "PRAGMA busy_timeout = 5000", nil); err != nil {
		t.Fatal(err)
	}
	return conn
}

// stallWriter holds the writer on a direct op until the returned function
// is called, so ops submitted meanwhile commit in one batch.
func stallWriter(t *testing.T, l *Ledger) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	stall := &op{kind: opDirect, name: "stall", direct: func(*sqlite.Conn) error { <-gate; return nil }, done: make(chan error, 1)}
	if err := l.submit(context.Background(), stall); err != nil {
		t.Fatal(err)
	}
	return func() {
		close(gate)
		if err := <-stall.done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterRows: the writer keeps recent rows and writes a changed row
// once per transaction (rows.go); what it keeps never hides another
// connection's commit nor a change that rolled back.
func TestWriterRows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(t *testing.T, l *Ledger)
	}{
		{"a row another connection deleted is gone for the writer", func(t *testing.T, l *Ledger) {
			ctx := ctxT(t)
			if _, err := l.Advance(ctx, Change{MessageID: "m1", Status: status.Routed}); err != nil {
				t.Fatal(err) // m1 is now in the writer's cache
			}
			if err := sqlitex.ExecuteTransient(otherConn(t, l), "DELETE FROM comms_journal WHERE message_id = 'm1'", nil); err != nil {
				t.Fatal(err)
			}
			_, err := l.Advance(ctx, Change{MessageID: "m1", AckStatus: status.DeliveredWebSocket})
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("advance of a row deleted by another connection = %v, want ErrNotFound", err)
			}
		}},
		{"a row another connection changed is read again", func(t *testing.T, l *Ledger) {
			ctx := ctxT(t)
			if _, err := l.Advance(ctx, Change{MessageID: "m1", Status: status.Routed}); err != nil {
				t.Fatal(err)
			}
			if err := sqlitex.ExecuteTransient(otherConn(t, l), "UPDATE comms_journal SET attempt = 7 WHERE message_id = 'm1'", nil); err != nil {
				t.Fatal(err)
			}
			m, err := l.Advance(ctx, Change{MessageID: "m1", Event: status.EventAttempt})
			if err != nil || m.Attempt != 7 {
				t.Fatalf("advance after another connection set attempt 7 = attempt %d, %v", m.Attempt, err)
			}
		}},
		{"a change that rolled back is not kept", func(t *testing.T, l *Ledger) {
			ctx := ctxT(t)
			capAtCurrentSize(t, l)
			big := strings.Repeat("x", 64<<10)
			if _, err := l.Advance(ctx, Change{MessageID: "m1", Status: status.Routed, Detail: map[string]any{"pad": big}}); err == nil {
				t.Fatal("a change over the size cap committed")
			}
			if err := l.SetMaxBytes(ctx, 0); err != nil {
				t.Fatal(err)
			}
			m, err := l.Advance(ctx, Change{MessageID: "m1", Event: status.EventAttempt})
			if err != nil || m.Status != status.Brokered {
				t.Fatalf("after the rolled-back change the writer sees %s, %v; want brokered", m.Status, err)
			}
		}},
		{"changes to one row in one transaction write it once", func(t *testing.T, l *Ledger) {
			ctx := ctxT(t)
			other := otherConn(t, l)
			if err := sqlitex.ExecuteScript(other, `INSERT INTO kv(key, value) VALUES ('updates', '0');
CREATE TRIGGER count_updates AFTER UPDATE ON comms_journal BEGIN UPDATE kv SET value = value + 1 WHERE key = 'updates'; END;`, nil); err != nil {
				t.Fatal(err)
			}
			release := stallWriter(t, l)
			l.AdvanceAsync(Change{MessageID: "m1", Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered})
			l.AdvanceAsync(Change{MessageID: "m1", Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked})
			done := make(chan error, 1)
			go func() { _, err := l.Append(ctx, msg("m2", "oracle", "architect", 2, "joins the batch")); done <- err }()
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			v, ok, err := l.KVGet(ctx, "updates")
			if n, _ := strconv.Atoi(v); err != nil || !ok || n != 1 {
				t.Fatalf("comms_journal updates = %q (%v, %v), want 1", v, ok, err)
			}
			m, err := l.Get(ctx, "m1")
			if err != nil || m.Status != status.Acked || m.AckStatus != status.DeliveredVerified {
				t.Fatalf("m1 = %s/%s, %v", m.Status, m.AckStatus, err)
			}
			evs, err := l.Events(ctx, "m1")
			if err != nil || len(evs) != 3 {
				t.Fatalf("m1 has %d events (%v), want brokered, delivered, acked", len(evs), err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := openTest(t, Options{})
			if _, err := l.Append(ctxT(t), msg("m1", "architect", "builder", 1, "hello")); err != nil {
				t.Fatal(err)
			}
			tc.run(t, l)
			if r, err := l.Verify(ctxT(t)); err != nil || (!r.OK && !strings.HasPrefix(t.Name(), "TestWriterRows/a_row_another")) {
				t.Fatalf("verify: %+v, %v", r, err)
			}
		})
	}
}
