package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prep    func(t *testing.T, path string)
		opts    Options
		wantErr error // nil: any error
	}{
		{"garbage file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, Options{}, ErrUnavailable},
		{"newer schema", func(t *testing.T, path string) {
			l, err := Open(context.Background(), path, Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			tamper(t, path, "UPDATE schema_version SET version = 99")
		}, Options{}, nil},
		{"read-only plain sqlite", func(t *testing.T, path string) {
			conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := sqlitex.ExecuteTransient(conn, "CREATE TABLE other (x)", nil); err != nil {
				t.Fatal(err)
			}
		}, Options{ReadOnly: true}, nil},
		{"cancelled context", func(t *testing.T, path string) {}, Options{}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			tt.prep(t, path)
			ctx := context.Background()
			if tt.wantErr == context.Canceled {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			tt.opts.Logger = testLogger(t)
			l, err := Open(ctx, path, tt.opts)
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Open = %v, want %v", err, tt.wantErr)
			}
			t.Log(err)
		})
	}
}

// TestCloseDrains queues many writes and closes at once: every queued write
// is committed and every waiter answered.
func TestCloseDrains(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openAt(t, path, Options{FTSInterval: time.Hour})
	ctx := ctxT(t)
	const n = 200
	ms := make([]*Message, n)
	for i := range ms {
		ms[i] = msg(fmt.Sprintf("d%d", i), "builder", "architect", int64(i+1), "drain me")
	}
	if err := l.AppendBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l.AdvanceAsync(Change{MessageID: fmt.Sprintf("d%d", i), Status: status.Routed})
	}
	var wg sync.WaitGroup
	appendErrs := make([]error, 8)
	for i := range appendErrs {
		wg.Go(func() {
			_, appendErrs[i] = l.Append(ctx, msg(fmt.Sprintf("late%d", i), "oracle", "architect", int64(i+1), "late"))
		})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	committed := 0
	for _, err := range appendErrs {
		switch {
		case err == nil:
			committed++
		case errors.Is(err, ErrClosed):
		default:
			t.Fatalf("Append racing Close = %v, want nil or ErrClosed", err)
		}
	}
	l2 := openAt(t, path, Options{FTSInterval: time.Hour})
	pending, err := l2.Pending(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != committed {
		t.Fatalf("%d pending after reopen, want %d (only the late appends)", len(pending), committed)
	}
	// Close indexed everything.
	hits, err := l2.Search(ctx, "drain", n+10)
	if err != nil || len(hits) != n {
		t.Fatalf("Search after Close = %d hits, %v", len(hits), err)
	}
	r, err := l2.Verify(ctx)
	if err != nil || !r.OK || r.Events != int64(2*n+committed) {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

// TestFTSCatchesUp indexes a backlog larger than one tick's chunk, through
// the writer's idle continuation.
func TestFTSCatchesUp(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{FTSInterval: 50 * time.Millisecond})
	ctx := ctxT(t)
	const n = ftsTickChunk + ftsIdleChunk + 10
	ms := make([]*Message, n)
	for i := range ms {
		ms[i] = &Message{MessageID: fmt.Sprintf("c%d", i), RawBody: fmt.Sprintf("backlog item tok%d", i)}
	}
	if err := l.AppendBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 20*time.Second, func() error {
		hits, err := l.Search(ctx, fmt.Sprintf("tok%d", n-1), 1)
		return poll.Want(err == nil && len(hits) == 1, "the whole backlog to be indexed")
	})
	hits, err := l.Search(ctx, "backlog", n+1)
	if err != nil || len(hits) != n {
		t.Fatalf("Search = %d hits, %v", len(hits), err)
	}
	if got := l.indexedRowID.Load(); got != n {
		t.Fatalf("indexed row id %d, want %d", got, n)
	}
}

// TestFTSIndexesAfterIdle: the FTS loop sleeps without a timer while
// nothing waits to be indexed, and a commit after an idle spell wakes it.
func TestFTSIndexesAfterIdle(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	l := openTest(t, Options{FTSInterval: 20 * time.Millisecond})
	for i, body := range []string{"first needle", "second needle after idle"} {
		time.Sleep(200 * time.Millisecond) // idle: the loop is asleep
		if _, err := l.Append(ctx, &Message{MessageID: fmt.Sprintf("m%d", i), RawBody: body}); err != nil {
			t.Fatal(err)
		}
		poll.For(t, 20*time.Second, func() error {
			hits, err := l.Search(ctx, "needle", 5)
			if err != nil {
				return err
			}
			return poll.Want(len(hits) == i+1, "the body to be indexed without FlushFTS")
		})
	}
}

// TestTwoWriters shows that a second process-level writer on the same file
// (e.g. a CLI beside the hub) keeps the chain valid: the writer reloads the
// chain tail inside each transaction.
func TestTwoWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	a := openAt(t, path, Options{})
	b := openAt(t, path, Options{})
	ctx := ctxT(t)
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if _, err := l.Append(ctx, msg(fmt.Sprintf("t%d", i), "architect", "builder", int64(i+1), "two writers")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := a.Verify(ctx)
	if err != nil || !r.OK || r.Events != 10 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}
