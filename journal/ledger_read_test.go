package journal

// Tests of reading the ledger: full-text search, obligations and signals,
// subscriptions, the key-value store and the queries.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

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
