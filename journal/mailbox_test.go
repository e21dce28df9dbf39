package journal

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"hm/internal/ground/status"
)

// mailboxFixture appends, in session 1 unless noted: a1 architect→builder,
// b1 builder→architect, all1 architect→all (broadcast), oth oracle→
// others-architect, o1 oracle→architect, rec user→builder recorded (a
// refused update, never routed), old builder-bound in session 0, and a2
// architect→builder; then acknowledges a2. It returns the ledger, every
// body indexed.
func mailboxFixture(t *testing.T) *Ledger {
	t.Helper()
	l := openTest(t, Options{FTSInterval: time.Hour})
	ctx := ctxT(t)
	rows := []*Message{
		msg("a1", "architect", "builder", 1, "plan the parser"),
		msg("b1", "builder", "architect", 1, "parser planned"),
		msg("all1", "architect", "all", 2, "standup parser"),
		msg("oth", "oracle", "others-architect", 1, "parser review for everyone but arch"),
		msg("o1", "oracle", "architect", 2, "parser findings"),
		msg("rec", "user", "builder", 0, "refused parser spam"),
		msg("old", "architect", "builder", 1, "old parser note"),
		msg("a2", "architect", "builder", 3, "ship the parser"),
	}
	rows[5].Status = status.Recorded
	rows[6].SessionID = "app-session-0"
	for _, m := range rows {
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Advance(ctx, Change{MessageID: "a2", Status: status.Acked, AckStatus: status.DeliveredVerified}); err != nil {
		t.Fatal(err)
	}
	if err := l.FlushFTS(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

func ids(ms []Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return out
}

// builderReader is how the broker reads for builder in the default team:
// builder receives "all" and "others-<another main pane>".
var builderReader = Reader{Role: "builder", Groups: []string{"all", "others-architect", "others-oracle"}}

func TestMailbox(t *testing.T) {
	t.Parallel()
	l := mailboxFixture(t)
	ctx := ctxT(t)
	archReader := Reader{Role: "architect", Groups: []string{"all", "others-builder", "others-oracle"}}
	first, _, err := l.Mailbox(ctx, MailboxQuery{SessionID: "app-session-1", Reader: builderReader})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		q        MailboxQuery
		want     []string
		wantMore bool
	}{
		{"everything builder received", MailboxQuery{SessionID: "app-session-1", Reader: builderReader}, []string{"a1", "all1", "oth", "a2"}, false},
		{"unread only", MailboxQuery{SessionID: "app-session-1", Reader: builderReader, UnreadOnly: true}, []string{"a1", "all1", "oth"}, false},
		{"limit", MailboxQuery{SessionID: "app-session-1", Reader: builderReader, Limit: 2}, []string{"a1", "all1"}, true},
		{"after a cursor", MailboxQuery{SessionID: "app-session-1", Reader: builderReader, AfterRowID: first[1].RowID}, []string{"oth", "a2"}, false},
		{"a broadcast's sender did not receive it; others-architect skips architect", MailboxQuery{SessionID: "app-session-1", Reader: archReader}, []string{"b1", "o1"}, false},
		{"another session", MailboxQuery{SessionID: "app-session-0", Reader: builderReader}, []string{"old"}, false},
		{"no groups: only rows to the role", MailboxQuery{SessionID: "app-session-1", Reader: Reader{Role: "builder"}}, []string{"a1", "a2"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := l.Mailbox(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tt.want) || more != tt.wantMore {
				t.Fatalf("got %v more=%v, want %v more=%v", ids(got), more, tt.want, tt.wantMore)
			}
		})
	}
	if _, _, err := l.Mailbox(ctx, MailboxQuery{SessionID: "app-session-1"}); !errors.Is(err, ErrNoRole) {
		t.Fatalf("no role: %v", err)
	}
	n, err := l.UnreadCount(ctx, "app-session-1", builderReader)
	if err != nil || n != 3 {
		t.Fatalf("unread count %d %v, want 3", n, err)
	}
}

func TestReaderSeesAndSearch(t *testing.T) {
	t.Parallel()
	l := mailboxFixture(t)
	ctx := ctxT(t)
	tests := []struct {
		name string
		q    SearchQuery
		want []string
	}{
		{"operator sees every row", SearchQuery{Query: "parser"}, []string{"a2", "old", "rec", "o1", "oth", "all1", "b1", "a1"}},
		{"builder: sent, received, never recorded rows", SearchQuery{Query: "parser", Reader: builderReader}, []string{"a2", "old", "oth", "all1", "b1", "a1"}},
		{"session filter", SearchQuery{Query: "parser", Reader: builderReader, SessionID: "app-session-1"}, []string{"a2", "oth", "all1", "b1", "a1"}},
		{"from and to", SearchQuery{Query: "parser", From: "architect", To: "builder"}, []string{"a2", "old", "a1"}},
		{"limit", SearchQuery{Query: "parser", Reader: builderReader, Limit: 2}, []string{"a2", "old"}},
		{"oracle sees its group row and what it sent", SearchQuery{Query: "parser", Reader: Reader{Role: "oracle", Groups: []string{"all", "others-architect", "others-builder"}}}, []string{"o1", "oth", "all1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := l.SearchWith(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.MessageID)
				if !tt.q.Reader.Sees(h.Message) {
					t.Errorf("Sees(%s) is false for a hit SQL let through", h.MessageID)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := l.SearchWith(ctx, SearchQuery{Query: `"unbalanced`}); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("bad query: %v", err)
	}
}

func TestAround(t *testing.T) {
	t.Parallel()
	l := mailboxFixture(t)
	ctx := ctxT(t)
	anchor, err := l.Get(ctx, "oth")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		before, after int
		r             Reader
		want          []string
	}{
		{"operator, 2 and 2", 2, 2, Reader{}, []string{"b1", "all1", "oth", "o1", "rec"}},
		{"the anchor's session only", 0, 9, Reader{}, []string{"oth", "o1", "rec", "a2"}},
		{"builder skips what it may not read", 9, 9, builderReader, []string{"a1", "b1", "all1", "oth", "a2"}},
		{"none around", 0, 0, builderReader, []string{"oth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Around(ctx, anchor, tt.before, tt.after, tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tt.want) {
				t.Fatalf("got %v, want %v", ids(got), tt.want)
			}
		})
	}
}

func TestObligationReads(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{})
	ctx := ctxT(t)
	ask := msg("ask", "architect", "builder", 1, "[ACK REQUIRED] review")
	ask.Obligation = &Obligation{OwnerRole: "builder"}
	for _, m := range []*Message{ask, msg("plain", "architect", "builder", 2, "fyi")} {
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	o, found, err := l.ObligationOf(ctx, "ask")
	if err != nil || !found || o.OwnerRole != "builder" || o.RequesterRole != "architect" || o.Ref != "ARCH #1" || o.ClosedBy != "" {
		t.Fatalf("ObligationOf(ask) = %+v %v %v", o, found, err)
	}
	if _, found, err := l.ObligationOf(ctx, "plain"); err != nil || found {
		t.Fatalf("ObligationOf(plain) found=%v %v", found, err)
	}
	// Builder answers ARCH #1: the obligation closes.
	if _, err := l.Append(ctx, &Message{MessageID: "re", SessionID: "app-session-1", SenderRole: "builder", TargetRole: "architect", Channel: "ws",
		Header: "BUILDER", Seq: 1, RawBody: "(BUILDER #1): ACK ARCH #1", Refs: []string{"ARCH #1"}}); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := l.ObligationOf(ctx, "ask"); o.ClosedBy != "re" {
		t.Fatalf("closed by %q, want re", o.ClosedBy)
	}
}
