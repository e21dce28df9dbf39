package journal

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// chainEnd reads the chain's last event ("<event_id>:<hash>") and kv
// chain_head without its signature, from the file at path.
func chainEnd(t *testing.T, path string) (last, head string) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = sqlitex.ExecuteTransient(conn, `SELECT (SELECT event_id || ':' || hash FROM comms_events ORDER BY event_id DESC LIMIT 1),
  (SELECT value FROM kv WHERE key = 'chain_head')`, &sqlitex.ExecOptions{ResultFunc: func(stmt *sqlite.Stmt) error {
		last = stmt.ColumnText(0)
		id, rest, _ := strings.Cut(stmt.ColumnText(1), ":")
		hash, _, _ := strings.Cut(rest, ":")
		head = id + ":" + hash
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return last, head
}

// TestChainHeadSigned: the writer signs the chain head lazily (head.go),
// but never leaves events unnamed for long: once it is idle, when a
// Checkpoint is taken and when the ledger closes, the head names the last
// event; Verify accepts the ledger at every moment.
func TestChainHeadSigned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		settle func(t *testing.T, l *Ledger, path string)
	}{
		{"idle", func(t *testing.T, l *Ledger, path string) {
			poll.For(t, 5*time.Second, func() error {
				if last, head := chainEnd(t, path); head != last {
					return fmt.Errorf("chain head %s, the chain ends at %s", head, last)
				}
				return nil
			})
		}},
		{"checkpoint", func(t *testing.T, l *Ledger, path string) {
			c, err := l.Checkpoint(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if last, _ := chainEnd(t, path); last != fmt.Sprintf("%d:%s", c.LastEventID, c.HeadHash) {
				t.Fatalf("checkpoint of event %d (%s), the chain ends at %s", c.LastEventID, c.HeadHash, last)
			}
		}},
		{"close", func(t *testing.T, l *Ledger, path string) {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
			l := openAt(t, path, Options{})
			for i := range 40 {
				id := fmt.Sprintf("m%d", i)
				if _, err := l.Append(ctx, msg(id, "architect", "builder", int64(i+1), "x")); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Advance(ctx, Change{MessageID: id, Status: status.Routed}); err != nil {
					t.Fatal(err)
				}
				if i%10 == 9 {
					if r, err := l.Verify(ctx); err != nil || !r.OK {
						t.Fatalf("Verify while writing = %+v, %v", r, err)
					}
				}
			}
			tc.settle(t, l, path)
			if last, head := chainEnd(t, path); head != last {
				t.Fatalf("chain head %s, the chain ends at %s", head, last)
			}
			r, err := openAt(t, path, Options{ReadOnly: true}).Verify(ctx)
			if err != nil || !r.OK || r.Events != 80 {
				t.Fatalf("Verify = %+v, %v", r, err)
			}
		})
	}
}

// TestVerifyHeadBehind: a signed head naming an earlier event of the chain
// (what a hub killed with -9 between two head signatures leaves) verifies;
// one whose hash is not that event's, or that names an event past the end
// (a cut tail), does not.
func TestVerifyHeadBehind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		id        int64
		hashOf    int64 // the event whose hash the head records
		wantFirst string
	}{
		{"earlier event", 7, 7, ""},
		{"first event", 1, 1, ""},
		{"earlier event, wrong hash", 7, 6, "comms_events event_id 7: differs from the chain head's record of it"},
		{"past the end", 12, 11, "comms_events: chain head records event_id 12 but the chain ends at event_id 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
			l := openAt(t, path, Options{})
			tamperFixture(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			key, err := LoadKey(filepath.Join(filepath.Dir(path), KeyFileName))
			if err != nil {
				t.Fatal(err)
			}
			conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			hash := ""
			if err := sqlitex.Execute(conn, "SELECT hash FROM comms_events WHERE event_id = ?", &sqlitex.ExecOptions{
				Args: []any{tc.hashOf}, ResultFunc: func(stmt *sqlite.Stmt) error { hash = stmt.ColumnText(0); return nil },
			}); err != nil || hash == "" {
				t.Fatalf("hash of event %d: %q %v", tc.hashOf, hash, err)
			}
			lk, err := newLedgerKey(key)
			if err != nil {
				t.Fatal(err)
			}
			head := newChainMAC(lk).headValue(tc.id, hash)
			if err := sqlitex.Execute(conn, "UPDATE kv SET value = ? WHERE key = 'chain_head'", &sqlitex.ExecOptions{Args: []any{head}}); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			r, err := openAt(t, path, Options{ReadOnly: true}).Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFirst == "" {
				if !r.OK {
					t.Fatalf("Verify = %+v, want ok", r)
				}
				return
			}
			if r.OK || !strings.HasPrefix(r.FirstBad, tc.wantFirst) {
				t.Fatalf("Verify = %+v, want FirstBad %q", r, tc.wantFirst)
			}
		})
	}
}

// warnCounter counts the warnings whose message contains want.
type warnCounter struct {
	slog.Handler
	want string
	n    *atomic.Int32
}

func (h *warnCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnCounter{Handler: h.Handler.WithAttrs(as), want: h.want, n: h.n}
}

func (h *warnCounter) WithGroup(name string) slog.Handler {
	return &warnCounter{Handler: h.Handler.WithGroup(name), want: h.want, n: h.n}
}

func (h *warnCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, h.want) {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

// TestChainHeadSignRetried: when the idle writer cannot sign the head (here
// another connection holds the write lock past the busy timeout), it warns
// once and tries again while idle, so the head names the last event soon
// after the ledger can commit again.
func TestChainHeadSignRetried(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "runtime", "evidence-ledger.db")
	warns := &warnCounter{Handler: testLogger(t).Handler(), want: "cannot sign the chain head", n: new(atomic.Int32)}
	l := openAt(t, path, Options{Logger: slog.New(warns), FTSInterval: time.Hour}) // no FTS commit to sign it instead
	lock, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	// Two appends in a row: the second commits before the head is
	// headEvery old, so the head is left for the idle writer. Take the
	// write lock before that (headIdle later); if the writer was quicker,
	// let go and try again.
	locked := false
	for i := 0; i < 50 && !locked; i++ {
		for j := range 2 {
			id := fmt.Sprintf("m%d-%d", i, j)
			if _, err := l.Append(ctx, msg(id, "architect", "builder", int64(2*i+j+1), "x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := sqlitex.ExecuteTransient(lock, "BEGIN IMMEDIATE", nil); err != nil {
			t.Fatal(err)
		}
		if last, head := chainEnd(t, path); head != last {
			locked = true
			break
		}
		if err := sqlitex.ExecuteTransient(lock, "ROLLBACK", nil); err != nil {
			t.Fatal(err)
		}
	}
	if !locked {
		t.Fatal("the idle writer signed the head before the lock every time")
	}
	// The writer's attempt waits out its busy timeout and fails.
	poll.For(t, 15*time.Second, func() error {
		return poll.Want(warns.n.Load() == 1, "one warning, have %d", warns.n.Load())
	})
	if last, head := chainEnd(t, path); head == last {
		t.Fatalf("chain head %s signed while another connection held the write lock", head)
	}
	if err := sqlitex.ExecuteTransient(lock, "ROLLBACK", nil); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 5*time.Second, func() error {
		if last, head := chainEnd(t, path); head != last {
			return fmt.Errorf("chain head %s, the chain ends at %s", head, last)
		}
		return nil
	})
	if n := warns.n.Load(); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}
