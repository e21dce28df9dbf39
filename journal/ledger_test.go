package journal

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
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hm/internal/poll"
	"hm/internal/status"

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

// tamper edits the database behind the ledger's back with a plain conn.
func tamper(t *testing.T, path, query string) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetBusyTimeout(10 * time.Second)
	if err := sqlitex.ExecuteTransient(conn, query, nil); err != nil {
		t.Fatalf("tamper %q: %v", query, err)
	}
	if conn.Changes() == 0 {
		t.Fatalf("tamper %q changed nothing", query)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{FTSInterval: time.Hour}) // only FlushFTS indexes
	ctx := ctxT(t)
	bodies := []string{"the broker routes frames", "ledger writer uses group commit", "broker and ledger agree", "nothing to see"}
	for i, b := range bodies {
		if _, err := l.Append(ctx, msg(fmt.Sprintf("s%d", i), "builder", "architect", int64(i+1), b)); err != nil {
			t.Fatal(err)
		}
	}
	if hits, err := l.Search(ctx, "broker", 10); err != nil || len(hits) != 0 {
		t.Fatalf("before flush: %v %v (indexing must not happen in Append)", hits, err)
	}
	if err := l.FlushFTS(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q     string
		limit int
		want  []string
	}{
		{"broker", 10, []string{"s2", "s0"}},
		{"broker", 1, []string{"s2"}},
		{"ledger AND broker", 10, []string{"s2"}},
		{`"group commit"`, 10, []string{"s1"}},
		{"rout*", 10, []string{"s0"}},
		{"absent", 10, nil},
		{"builder", 0, []string{"s3", "s2", "s1", "s0"}}, // header text is indexed too
	}
	for _, tt := range tests {
		hits, err := l.Search(ctx, tt.q, tt.limit)
		if err != nil {
			t.Fatalf("Search(%q): %v", tt.q, err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.MessageID)
		}
		if !reflect.DeepEqual(ids, tt.want) {
			t.Errorf("Search(%q, %d) = %v, want %v", tt.q, tt.limit, ids, tt.want)
		}
	}
	hits, _ := l.Search(ctx, "group", 1)
	if len(hits) != 1 || !strings.Contains(hits[0].Excerpt, "[group]") || hits[0].RawBody == "" {
		t.Fatalf("excerpt: %+v", hits)
	}
	for _, bad := range []string{`"unterminated`, "AND", "(", "nocolumn:word", "   ", "*"} {
		if _, err := l.Search(ctx, bad, 5); !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%q) = %v, want ErrBadQuery", bad, err)
		}
	}
}

func TestSearchWithoutFlush(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{}) // default 500ms indexing
	ctx := ctxT(t)
	if _, err := l.Append(ctx, msg("late", "oracle", "architect", 1, "zebracorn sighting")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	poll.For(t, 5*time.Second, func() error {
		hits, err := l.Search(ctx, "zebracorn", 5)
		return poll.Want(err == nil && len(hits) == 1 && hits[0].MessageID == "late", "search to find the new body")
	})
	t.Logf("indexed after %v", time.Since(start))
}

func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{"broker", `"a b"`, "a OR b", "NEAR(a b, 2)", "a*", "(", `"`, "-x", "x:y", "^a", "a NOT", "{a b}: c", "\x00"} {
		f.Add(s)
	}
	l := openTest(f, Options{FTSInterval: time.Hour})
	ctx := context.Background()
	if _, err := l.Append(ctx, msg("f", "oracle", "architect", 1, "fuzzing the broker with a b c")); err != nil {
		f.Fatal(err)
	}
	if err := l.FlushFTS(ctx); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := l.Search(ctx, q, 5)
		if err != nil && !errors.Is(err, ErrBadQuery) {
			t.Fatalf("Search(%q) = %v, want nil or ErrBadQuery", q, err)
		}
		for _, h := range hits {
			if h.MessageID != "f" {
				t.Fatalf("unexpected hit %+v", h)
			}
		}
	})
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

func TestObligationsAndSignals(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(1_000_000)
	l := openTest(t, Options{Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	ctx := ctxT(t)

	ask := msg("ask", "architect", "builder", 12, "[ACK REQUIRED] please review\nTASK: review the broker\nDECISION: use sqlite")
	ask.Obligation = &Obligation{OwnerRole: "builder"}
	ask.Signals = []Signal{{Kind: "task", Text: " review the broker "}, {Kind: "DECISION", Text: "use sqlite"}}
	if _, err := l.Append(ctx, ask); err != nil {
		t.Fatal(err)
	}
	other := msg("other-session", "architect", "builder", 12, "[ACK REQUIRED] same ref, other session")
	other.SessionID = "app-session-2"
	other.Obligation = &Obligation{OwnerRole: "builder", Ref: "arch #12"}
	if _, err := l.Append(ctx, other); err != nil {
		t.Fatal(err)
	}
	clock.Add(10 * 60 * 1000)
	obls, err := l.OpenObligations(ctx, 10*60*1000)
	if err != nil || len(obls) != 2 {
		t.Fatalf("OpenObligations(10m) = %+v, %v", obls, err)
	}
	if o := obls[0]; o.MessageID != "ask" || o.OwnerRole != "builder" || o.RequesterRole != "architect" || o.Ref != "ARCH #12" ||
		o.SessionID != "app-session-1" || o.OpenedAtMs != 1_000_000 || o.ClosedBy != "" || o.RemindedAtMs != 0 {
		t.Fatalf("obligation %+v", o)
	}
	if young, _ := l.OpenObligations(ctx, 20*60*1000); len(young) != 0 {
		t.Fatalf("OpenObligations(20m) = %+v", young)
	}
	if err := l.MarkReminded(ctx, "ask"); err != nil {
		t.Fatal(err)
	}
	obls, _ = l.OpenObligations(ctx, 0)
	if len(obls) != 2 || obls[0].RemindedAtMs != clock.Load() {
		t.Fatalf("after MarkReminded: %+v", obls)
	}

	// Oracle references ARCH #12: not the owner, obligation stays open,
	// but the TASK signal is resolved.
	clock.Add(1000)
	o := msg("oracle-ref", "oracle", "architect", 1, "looked at ARCH #12 too")
	o.Refs = []string{"ARCH #12"}
	if _, err := l.Append(ctx, o); err != nil {
		t.Fatal(err)
	}
	if obls, _ = l.OpenObligations(ctx, 0); len(obls) != 2 {
		t.Fatalf("non-owner closed the obligation: %+v", obls)
	}
	// Builder answers: closes the obligation in its session only.
	clock.Add(1000)
	ack := msg("ack", "builder", "architect", 1, "ACK arch #12, reviewed")
	ack.Refs = []string{"arch #12", "ARCH  #12"}
	if _, err := l.Append(ctx, ack); err != nil {
		t.Fatal(err)
	}
	obls, _ = l.OpenObligations(ctx, 0)
	if len(obls) != 1 || obls[0].MessageID != "other-session" {
		t.Fatalf("open after ack: %+v", obls)
	}
	all, err := l.Obligations(ctx, "app-session-1")
	if err != nil || len(all) != 1 || all[0].ClosedBy != "ack" || all[0].ClosedAtMs != ack.BrokeredAtMs && all[0].ClosedAtMs != clock.Load() {
		t.Fatalf("closed obligation %+v, %v", all, err)
	}
	if err := l.MarkReminded(ctx, "ask"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkReminded on closed = %v, want ErrNotFound", err)
	}
	sigs, err := l.Signals(ctx, "app-session-1")
	if err != nil || len(sigs) != 2 {
		t.Fatalf("signals %+v, %v", sigs, err)
	}
	if s := sigs[0]; s.Kind != "TASK" || s.Text != "review the broker" || s.Ref != "ARCH #12" || s.ResolvedBy != "oracle-ref" ||
		s.SenderRole != "architect" || s.MessageID != "ask" {
		t.Fatalf("task signal %+v", s)
	}
	if s := sigs[1]; s.Kind != "DECISION" || s.ResolvedBy != "" {
		t.Fatalf("decision signal %+v", s)
	}
	evs, _ := l.Events(ctx, "ask")
	var names []status.Event
	for _, e := range evs {
		names = append(names, e.Event)
	}
	if want := []status.Event{status.EventBrokered, status.EventObligationReminded, status.EventObligationClosed}; !reflect.DeepEqual(names, want) {
		t.Fatalf("events of ask: %v, want %v", names, want)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	ch, cancel := l.Subscribe(16)
	slow, cancelSlow := l.Subscribe(1)
	defer cancelSlow()
	if _, err := l.Append(ctx, msg("e1", "architect", "builder", 1, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Advance(ctx, Change{MessageID: "e1", Status: status.Routed, AckStatus: status.DeliveredWebSocket}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := l.Append(ctx, msg(fmt.Sprintf("f%d", i), "architect", "builder", int64(i+2), "y")); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		id    string
		event status.Event
		st    status.Status
	}{
		{"e1", "brokered", "brokered"}, {"e1", "routed", "routed"},
		{"f0", "brokered", "brokered"}, {"f1", "brokered", "brokered"}, {"f2", "brokered", "brokered"}, {"f3", "brokered", "brokered"}, {"f4", "brokered", "brokered"},
	}
	for i, w := range want {
		select {
		case e := <-ch:
			if e.MessageID != w.id || e.Event != w.event || e.Row.Status != w.st || e.EventID != int64(i+1) || e.Row.MessageID != w.id {
				t.Fatalf("event %d = %+v, want %+v", i, e, w)
			}
			if !json.Valid(e.Detail) {
				t.Fatalf("event detail %q", e.Detail)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not received", i)
		}
	}
	if l.Dropped() < 6 {
		t.Fatalf("slow subscriber: dropped %d, want >= 6", l.Dropped())
	}
	if e := <-slow; e.MessageID != "e1" {
		t.Fatalf("slow subscriber got %+v", e)
	}
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
}

func TestKV(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	if _, ok, err := l.KVGet(ctx, "telegram.offset"); ok || err != nil {
		t.Fatalf("missing key: %v %v", ok, err)
	}
	for _, v := range []string{"41", "42"} {
		if err := l.KVSet(ctx, "telegram.offset", v); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := l.KVGet(ctx, "telegram.offset"); got != v || !ok || err != nil {
			t.Fatalf("KVGet = %q %v %v, want %q", got, ok, err, v)
		}
	}
	for _, k := range []string{"chain_head", "fts_last_rowid", ""} {
		if err := l.KVSet(ctx, k, "x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("KVSet(%q) = %v, want ErrInvalid", k, err)
		}
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	add := func(id, session, target string, st status.Status, seq int64) {
		m := msg(id, "architect", target, seq, id)
		m.SessionID = session
		m.Status = st
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	add("q1", "s1", "builder", "", 1)
	add("q2", "s1", "oracle", "routed", 2)
	add("q3", "s2", "builder", "", 1)
	add("q4", "s2", "oracle", "", 2)
	add("q5", "s2", "oracle", "failed", 2)
	ids := func(ms []Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.MessageID)
		}
		return out
	}
	tests := []struct {
		name string
		get  func() ([]Message, error)
		want []string
	}{
		{"pending all", func() ([]Message, error) { return l.Pending(ctx, "") }, []string{"q1", "q3", "q4"}},
		{"pending builder", func() ([]Message, error) { return l.Pending(ctx, "builder") }, []string{"q1", "q3"}},
		{"pending nobody", func() ([]Message, error) { return l.Pending(ctx, "user") }, nil},
		{"history all", func() ([]Message, error) { return l.History(ctx, HistoryQuery{}) }, []string{"q1", "q2", "q3", "q4", "q5"}},
		{"history last 2", func() ([]Message, error) { return l.History(ctx, HistoryQuery{Last: 2}) }, []string{"q4", "q5"}},
		{"history s1", func() ([]Message, error) { return l.History(ctx, HistoryQuery{SessionID: "s1"}) }, []string{"q1", "q2"}},
		{"history s2 last 1", func() ([]Message, error) { return l.History(ctx, HistoryQuery{SessionID: "s2", Last: 1}) }, []string{"q5"}},
		{"history after", func() ([]Message, error) { return l.History(ctx, HistoryQuery{AfterRowID: 3}) }, []string{"q4", "q5"}},
	}
	for _, tt := range tests {
		got, err := tt.get()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(ids(got), tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, ids(got), tt.want)
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
