package journal

// Tests of writing to the ledger: Append and its dedupe, Advance,
// batches, concurrent writers, a closed ledger and cancelled contexts.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestAppendGetDedupe(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	l := openTest(t, Options{Now: func() time.Time { return now }})
	ctx := ctxT(t)

	in := msg("hm-1", "architect", "builder", 1, "hello builder")
	in.Priority = "urgent"
	in.MetadataJSON = `{"tags":["URGENT"]}`
	in.SentAtMs = 1_699_999_999_000
	got, err := l.Append(ctx, in)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if in.RowID != 0 || in.BodyHash != "" {
		t.Fatalf("Append modified its argument: %+v", in)
	}
	want := Message{
		RowID: 1, MessageID: "hm-1", SessionID: "app-session-1", SenderRole: "architect", TargetRole: "builder",
		Channel: "ws", Direction: "outbound", Seq: 1, Header: "ARCH", Priority: "urgent", SentAtMs: 1_699_999_999_000,
		BrokeredAtMs: now.UnixMilli(), RawBody: "(ARCH #1): hello builder",
		BodyHash:  "e35d9a32bb7b1c6b9d0bf4a7a47f70bb04f4a98c1b1d5c4d2c5e4c5b8e1cbe1b",
		BodyBytes: int64(len("(ARCH #1): hello builder")), Status: "brokered", MetadataJSON: `{"tags":["URGENT"]}`,
		UpdatedAtMs: now.UnixMilli(),
	}
	want.BodyHash = got.BodyHash // checked separately below
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Append returned\n%+v\nwant\n%+v", got, want)
	}
	if got.BodyHash != sha256Hex(want.RawBody) {
		t.Fatalf("body hash %s, want sha256 of body", got.BodyHash)
	}
	read, err := l.Get(ctx, "hm-1")
	if err != nil || !reflect.DeepEqual(read, got) {
		t.Fatalf("Get = %+v, %v; want %+v", read, err, got)
	}

	// Duplicate: existing row + ErrDuplicate, no write.
	dup := msg("hm-1", "oracle", "architect", 9, "something else")
	again, err := l.Append(ctx, dup)
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate Append error = %v, want ErrDuplicate", err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("duplicate Append returned %+v, want existing %+v", again, got)
	}
	evs, err := l.Events(ctx, "hm-1")
	if err != nil || len(evs) != 1 || evs[0].Event != status.EventBrokered {
		t.Fatalf("events after duplicate = %+v, %v", evs, err)
	}
	var detail map[string]any
	if err := json.Unmarshal(evs[0].Detail, &detail); err != nil || detail["body_hash"] != got.BodyHash {
		t.Fatalf("brokered detail %s: %v", evs[0].Detail, err)
	}

	if _, err := l.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing = %v, want ErrNotFound", err)
	}

	// Defaults and NULLs.
	bare, err := l.Append(ctx, &Message{MessageID: "bare", RawBody: ""})
	if err != nil {
		t.Fatal(err)
	}
	if bare.Seq != 0 || bare.SentAtMs != 0 || bare.Direction != "outbound" || bare.Priority != "normal" || bare.MetadataJSON != "{}" ||
		bare.BodyHash != sha256Hex("") || bare.Status != status.Brokered {
		t.Fatalf("defaults not applied: %+v", bare)
	}
	if err := l.Read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, "SELECT seq IS NULL AND sent_at_ms IS NULL FROM comms_journal WHERE message_id='bare'", &sqlitex.ExecOptions{
			ResultFunc: func(stmt *sqlite.Stmt) error {
				if !stmt.ColumnBool(0) {
					return errors.New("seq/sent_at_ms not NULL")
				}
				return nil
			}})
	}); err != nil {
		t.Fatal(err)
	}
}

func TestAppendInvalid(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	tests := []struct {
		name string
		m    *Message
	}{
		{"nil", nil},
		{"no id", &Message{RawBody: "x"}},
		{"bad status", &Message{MessageID: "a", Status: "lost"}},
		{"bad ack", &Message{MessageID: "a", AckStatus: "maybe"}},
		{"bad metadata", &Message{MessageID: "a", MetadataJSON: "{"}},
		{"signal without kind", &Message{MessageID: "a", Signals: []Signal{{Text: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := l.Append(ctx, tt.m); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Append = %v, want ErrInvalid", err)
			}
		})
	}
	h, err := l.History(ctx, HistoryQuery{})
	if err != nil || len(h) != 0 {
		t.Fatalf("invalid appends wrote rows: %v %v", h, err)
	}
}

func TestAdvanceMonotonic(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	if _, err := l.Append(ctx, msg("m", "architect", "builder", 1, "x")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		change     Change
		wantStatus status.Status
		wantAck    status.Stage
		wantCode   status.Code
		wantEvent  status.Event // "" = no event written
	}{
		{Change{AckStatus: status.AcceptedUnverified}, status.Brokered, status.AcceptedUnverified, "", status.Event(status.AcceptedUnverified)},
		{Change{Status: status.Failed, ErrorCode: "pane_exited"}, status.Failed, status.AcceptedUnverified, "pane_exited", status.Event(status.Failed)},
		{Change{Status: status.Failed, ErrorCode: "other"}, status.Failed, status.AcceptedUnverified, "pane_exited", ""},
		{Change{Status: status.Brokered}, status.Failed, status.AcceptedUnverified, "pane_exited", ""},
		{Change{Status: status.Routed, AckStatus: status.DeliveredWebSocket}, status.Routed, status.DeliveredWebSocket, "pane_exited", status.Event(status.Routed)},
		{Change{Status: status.Failed, ErrorCode: "late"}, status.Routed, status.DeliveredWebSocket, "pane_exited", ""},
		{Change{AckStatus: status.AcceptedUnverified}, status.Routed, status.DeliveredWebSocket, "pane_exited", ""},
		{Change{Event: "note", Detail: map[string]any{"why": "explicit"}}, status.Routed, status.DeliveredWebSocket, "pane_exited", "note"},
		{Change{IncAttempt: true}, status.Routed, status.DeliveredWebSocket, "pane_exited", "attempt"},
		{Change{Status: status.Acked, AckStatus: status.DeliveredVerified}, status.Acked, status.DeliveredVerified, "pane_exited", status.Event(status.Acked)},
	}
	wantEvents := []status.Event{status.EventBrokered}
	for i, s := range steps {
		s.change.MessageID = "m"
		got, err := l.Advance(ctx, s.change)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got.Status != s.wantStatus || got.AckStatus != s.wantAck || got.ErrorCode != s.wantCode {
			t.Fatalf("step %d: got %s/%s/%s, want %s/%s/%s", i, got.Status, got.AckStatus, got.ErrorCode, s.wantStatus, s.wantAck, s.wantCode)
		}
		if s.wantEvent != "" {
			wantEvents = append(wantEvents, s.wantEvent)
		}
		stored, err := l.Get(ctx, "m")
		if err != nil || !reflect.DeepEqual(stored, got) {
			t.Fatalf("step %d: stored %+v != returned %+v (%v)", i, stored, got, err)
		}
	}
	evs, err := l.Events(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	var names []status.Event
	for _, e := range evs {
		names = append(names, e.Event)
	}
	if !reflect.DeepEqual(names, wantEvents) {
		t.Fatalf("events %v, want %v", names, wantEvents)
	}
	var d map[string]any
	if err := json.Unmarshal(evs[2].Detail, &d); err != nil || d["error_code"] != "pane_exited" || d["status"] != "failed" {
		t.Fatalf("failed event detail %s (%v)", evs[2].Detail, err)
	}
	if err := json.Unmarshal(evs[4].Detail, &d); err != nil || d["why"] != "explicit" {
		t.Fatalf("note event detail %s (%v)", evs[5].Detail, err)
	}
	if _, err := l.Advance(ctx, Change{MessageID: "ghost", Status: status.Routed}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Advance unknown = %v, want ErrNotFound", err)
	}
	if _, err := l.Advance(ctx, Change{Status: status.Routed}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Advance without id = %v, want ErrInvalid", err)
	}
	if _, err := l.Advance(ctx, Change{MessageID: "m", Event: "x", Detail: map[string]any{"f": func() {}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Advance with unmarshalable detail = %v, want ErrInvalid", err)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestAdvanceAsyncOrder(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	if _, err := l.Append(ctx, msg("m", "architect", "builder", 1, "x")); err != nil {
		t.Fatal(err)
	}
	l.AdvanceAsync(Change{MessageID: "m", AckStatus: status.AcceptedUnverified})
	l.AdvanceAsync(Change{MessageID: "m", Status: status.Routed, AckStatus: status.DeliveredWebSocket})
	l.AdvanceAsync(Change{MessageID: "ghost", Status: status.Routed}) // logged, not fatal
	l.AdvanceAsync(Change{})                                          // logged, not fatal
	got, err := l.Advance(ctx, Change{MessageID: "m", Event: "barrier"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != status.Routed || got.AckStatus != status.DeliveredWebSocket {
		t.Fatalf("after async changes: %+v", got)
	}
	evs, _ := l.Events(ctx, "m")
	var names []status.Event
	for _, e := range evs {
		names = append(names, e.Event)
	}
	if want := []status.Event{"brokered", "accepted.unverified", "routed", "barrier"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
}

func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	const workers, each = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			role := fmt.Sprintf("builder-bg-%d", w)
			for i := range each {
				m := &Message{MessageID: fmt.Sprintf("w%d-%d", w, i), SessionID: "s", SenderRole: role, TargetRole: "builder",
					Header: strings.ToUpper(role), Seq: int64(i + 1), RawBody: fmt.Sprintf("worker %d message %d", w, i)}
				if _, err := l.Append(ctx, m); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					l.AdvanceAsync(Change{MessageID: m.MessageID, Status: status.Routed})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h, err := l.History(ctx, HistoryQuery{})
	if err != nil || len(h) != workers*each {
		t.Fatalf("History has %d rows (%v), want %d", len(h), err, workers*each)
	}
	seen := map[string]bool{}
	for i, m := range h {
		if m.RowID != int64(i+1) || seen[m.MessageID] {
			t.Fatalf("row %d: %+v", i, m)
		}
		seen[m.MessageID] = true
	}
	if _, err := l.Advance(ctx, Change{MessageID: "w0-0", Event: "barrier"}); err != nil {
		t.Fatal(err)
	}
	r, err := l.Verify(ctx)
	if err != nil || !r.OK || r.Messages != workers*each {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	st := l.Stats()
	if st.Ops < workers*each || st.Commits == 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("group commit: %d ops in %d commits (%.1f per commit)", st.Ops, st.Commits, float64(st.Ops)/float64(st.Commits))
}

func TestBatchFailureIsolated(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	// A fake op that fails with a non-logical error forces the batch to
	// roll back; the other ops in the batch must still commit.
	bad := &op{kind: opTx, name: "boom", apply: func(tx *txn) error {
		if err := tx.exec("INSERT INTO kv(key, value) VALUES ('boom', 'x')"); err != nil {
			return err
		}
		return errors.New("injected failure")
	}, done: make(chan error, 1)}
	// Stall the writer so the ops queue up into one batch.
	release := make(chan struct{})
	stall := &op{kind: opDirect, name: "stall", direct: func(*sqlite.Conn) error { <-release; return nil }, done: make(chan error, 1)}
	if err := l.submit(ctx, stall); err != nil {
		t.Fatal(err)
	}
	type res struct {
		m   Message
		err error
	}
	results := make(chan res, 3)
	go func() { m, err := l.Append(ctx, msg("a1", "oracle", "architect", 1, "one")); results <- res{m, err} }()
	poll.For(t, 5*time.Second, func() error { return poll.Want(len(l.ops) == 1, "first append queued, have %v", len(l.ops)) })
	if err := l.submit(ctx, bad); err != nil {
		t.Fatal(err)
	}
	go func() { m, err := l.Append(ctx, msg("a2", "oracle", "architect", 2, "two")); results <- res{m, err} }()
	poll.For(t, 5*time.Second, func() error { return poll.Want(len(l.ops) == 3, "ops queued, have %v", len(l.ops)) })
	close(release)
	if err := <-stall.done; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("unrelated append failed: %v", r.err)
		}
	}
	if err := <-bad.done; !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("bad op error = %v", err)
	}
	if _, ok, _ := l.KVGet(ctx, "boom"); ok {
		t.Fatal("failed op's write was committed")
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK || r.Messages != 2 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestAppendBatch(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	ms := []*Message{msg("b1", "architect", "builder", 1, "one"), msg("b2", "architect", "builder", 2, "two")}
	if err := l.AppendBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if ms[0].RowID != 1 || ms[1].RowID != 2 || ms[1].BodyHash != sha256Hex(ms[1].RawBody) {
		t.Fatalf("batch not filled in place: %+v %+v", ms[0], ms[1])
	}
	// A duplicate anywhere fails the whole batch and writes nothing.
	err := l.AppendBatch(ctx, []*Message{msg("b3", "architect", "builder", 3, "three"), msg("b1", "architect", "builder", 1, "one")})
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("AppendBatch with duplicate = %v", err)
	}
	if _, err := l.Get(ctx, "b3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("partial batch committed: %v", err)
	}
	if err := l.AppendBatch(ctx, []*Message{{}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid batch = %v", err)
	}
	if err := l.AppendBatch(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK || r.Events != 2 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	sub, _ := l.Subscribe(4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub; ok {
		t.Fatal("subscription channel not closed by Close")
	}
	checks := map[string]error{}
	_, checks["Append"] = l.Append(ctx, msg("x", "a", "b", 1, "x"))
	_, checks["Advance"] = l.Advance(ctx, Change{MessageID: "x", Status: status.Routed})
	_, checks["Get"] = l.Get(ctx, "x")
	_, checks["Verify"] = l.Verify(ctx)
	checks["KVSet"] = l.KVSet(ctx, "a", "b")
	checks["FlushFTS"] = l.FlushFTS(ctx)
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	l.AdvanceAsync(Change{MessageID: "x"}) // must not panic or block
	ch, cancel := l.Subscribe(1)
	if _, ok := <-ch; ok {
		t.Fatal("Subscribe after Close returned an open channel")
	}
	cancel()
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, msg("c", "a", "b", 1, "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with cancelled ctx = %v", err)
	}
	if _, err := l.Get(ctx, "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with cancelled ctx = %v", err)
	}
	// A read blocked on a busy pool gives up when its context ends.
	hold := make(chan struct{})
	var held sync.WaitGroup
	for range 3 {
		held.Add(1)
		go func() {
			_ = l.Read(context.Background(), func(*sqlite.Conn) error { held.Done(); <-hold; return nil })
		}()
	}
	held.Wait()
	tctx, tcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer tcancel()
	if err := l.Read(tctx, func(*sqlite.Conn) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read on exhausted pool = %v", err)
	}
	close(hold)
}
