package broker_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/status"
	"hm/journal"
)

var queryN atomic.Int64

// query sends a query frame and decodes its response's result into out.
func query(t *testing.T, c *client.Client, op string, payload, out any) error {
	t.Helper()
	return respond(t, c, proto.Frame{Type: proto.TypeQuery, Op: op, RequestID: "q" + strconv.FormatInt(queryN.Add(1), 10)}, payload, out)
}

// respond sends f with payload as its payload and decodes the result of
// its response into out (nil: not decoded). An error frame answering it is
// returned; a response with ok:false fails the test.
func respond(t *testing.T, c *client.Client, f proto.Frame, payload, out any) error {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	f.Payload = raw
	var resp struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
	}
	if err := c.Request(ctxT(t), f, proto.TypeResponse, &resp); err != nil {
		return err
	}
	if !resp.OK {
		t.Fatalf("response ok:false without an error frame: %s", resp.Result)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			t.Fatalf("decode %s result: %v", f.Type, err)
		}
	}
	return nil
}

func viewIDs(vs []proto.MessageView) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.MessageID)
	}
	return out
}

// queryFixture: architect sends a1 and ask ([ACK REQUIRED]) to builder and
// a broadcast; oracle sends o1 to architect. No pane or listener takes
// them, so all stay unread.
func queryFixture(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	arch, oracle := h.as("architect", false), h.as("oracle", false)
	for _, s := range []struct {
		c *client.Client
		f proto.Frame
	}{
		{arch, proto.Frame{Target: "builder", MessageID: "a1", Content: "plan the zebra parser"}},
		{arch, proto.Frame{Target: "builder", MessageID: "ask", Content: "[ACK REQUIRED] review the zebra parser"}},
		{arch, proto.Frame{Type: proto.TypeBroadcast, MessageID: "all1", Content: "zebra standup"}},
		{oracle, proto.Frame{Target: "architect", MessageID: "o1", Content: "zebra findings for arch only"}},
	} {
		if ack := send(t, s.c, s.f); !ack.OK {
			t.Fatalf("send %s: %+v", s.f.MessageID, ack)
		}
	}
	if err := h.ledger.FlushFTS(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestQueryScopes(t *testing.T) {
	t.Parallel()
	h := queryFixture(t)
	builder, op := h.as("builder", false), h.as("user", false)
	tests := []struct {
		name     string
		c        *client.Client
		op       string
		payload  any
		wantCode status.Code
		check    func(t *testing.T, raw json.RawMessage)
	}{
		{"builder's inbox: unread, oldest first", builder, proto.QueryInbox, proto.InboxQuery{}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.InboxResult](t, raw)
			if got := viewIDs(r.Messages); !reflect.DeepEqual(got, []string{"a1", "ask", "all1"}) || r.Unread != 3 || r.More || r.Role != "builder" {
				t.Fatalf("inbox %v unread %d more %v role %s", got, r.Unread, r.More, r.Role)
			}
			if m := r.Messages[1]; m.Body == "" || !m.Unread || m.Ref != "ARCH #2" || m.From != "architect" || r.Cursor != r.Messages[2].Cursor {
				t.Fatalf("message view %+v cursor %d", m, r.Cursor)
			}
		}},
		{"limit and cursor", builder, proto.QueryInbox, proto.InboxQuery{Limit: 1, IncludeBodies: new(false)}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.InboxResult](t, raw)
			if got := viewIDs(r.Messages); !reflect.DeepEqual(got, []string{"a1"}) || !r.More || r.Messages[0].Body != "" || r.Messages[0].Snippet == "" {
				t.Fatalf("inbox %+v", r)
			}
		}},
		{"a role may not read another's inbox", builder, proto.QueryInbox, proto.InboxQuery{Role: "architect"}, status.CodeRoleMismatch, nil},
		{"the operator may", op, proto.QueryInbox, proto.InboxQuery{Role: "ARCH"}, "", func(t *testing.T, raw json.RawMessage) {
			if got := viewIDs(decode[proto.InboxResult](t, raw).Messages); !reflect.DeepEqual(got, []string{"o1"}) {
				t.Fatalf("architect's inbox %v", got)
			}
		}},
		{"unknown role", op, proto.QueryInbox, proto.InboxQuery{Role: "nobody"}, status.CodeInvalidTarget, nil},
		{"builder's search sees its rows only", builder, proto.QuerySearch, proto.SearchQuery{Query: "zebra"}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.SearchResult](t, raw)
			if got := viewIDs(r.Hits); !reflect.DeepEqual(got, []string{"all1", "ask", "a1"}) || r.Hits[0].Snippet == "" || r.Hits[0].Body != "" {
				t.Fatalf("hits %+v", r.Hits)
			}
		}},
		{"the operator's search sees every row", op, proto.QuerySearch, proto.SearchQuery{Query: "zebra", From: "oracle", Session: "current"}, "", func(t *testing.T, raw json.RawMessage) {
			if got := viewIDs(decode[proto.SearchResult](t, raw).Hits); !reflect.DeepEqual(got, []string{"o1"}) {
				t.Fatalf("hits %v", got)
			}
		}},
		{"malformed search", builder, proto.QuerySearch, proto.SearchQuery{Query: `"zebra`}, status.CodeBadRequest, nil},
		{"timeline of a message builder received", builder, proto.QueryTimeline, proto.TimelineQuery{MessageID: "ask", Before: new(1)}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.TimelineResult](t, raw)
			if got := viewIDs(r.Messages); !reflect.DeepEqual(got, []string{"a1", "ask", "all1"}) || r.Messages[0].Snippet == "" {
				t.Fatalf("timeline %v", got)
			}
		}},
		{"timeline of another role's message", builder, proto.QueryTimeline, proto.TimelineQuery{MessageID: "o1"}, status.CodeNotFound, nil},
		{"get: another role's message and an unknown one are missing", builder, proto.QueryGet, proto.GetQuery{MessageIDs: []string{"ask", "o1", "nope", "ask"}}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.GetResult](t, raw)
			if len(r.Messages) != 1 || !reflect.DeepEqual(r.Missing, []string{"o1", "nope"}) {
				t.Fatalf("get %+v", r)
			}
			d := r.Messages[0]
			if d.Body == "" || len(d.Events) == 0 || d.Events[0].Event != status.EventBrokered || d.Obligation == nil || !d.Obligation.Open || d.Obligation.Owner != "builder" {
				t.Fatalf("detail %+v", d)
			}
		}},
		{"get with no ids", builder, proto.QueryGet, proto.GetQuery{}, status.CodeBadRequest, nil},
		{"builder's status", builder, proto.QueryStatus, nil, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.StatusResult](t, raw)
			if r.Role != "builder" || r.Header != "BUILDER" || r.PaneID != "2" || r.Operator || r.Unread != 3 || len(r.Panes) != 3 ||
				len(r.Obligations) != 1 || r.Obligations[0].MessageID != "ask" || len(r.Awaiting) != 0 {
				t.Fatalf("status %+v", r)
			}
		}},
		{"architect awaits builder", op, proto.QueryStatus, proto.StatusQuery{Role: "architect"}, "", func(t *testing.T, raw json.RawMessage) {
			r := decode[proto.StatusResult](t, raw)
			if !r.Operator || len(r.Awaiting) != 1 || r.Awaiting[0].Owner != "builder" || len(r.Obligations) != 0 || r.Unread != 1 {
				t.Fatalf("status %+v", r)
			}
		}},
		{"unknown op", builder, "delete", nil, status.CodeBadRequest, nil},
		{"unknown field", builder, proto.QueryInbox, map[string]any{"unread": true}, status.CodeBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw json.RawMessage
			err := query(t, tt.c, tt.op, tt.payload, &raw)
			var pe *proto.Error
			switch {
			case tt.wantCode != "" && (!errors.As(err, &pe) || pe.Code != tt.wantCode):
				t.Fatalf("err %v, want %s", err, tt.wantCode)
			case tt.wantCode == "" && err != nil:
				t.Fatal(err)
			case tt.check != nil:
				tt.check(t, raw)
			}
		})
	}
}

// TestQueryNeverChangesState: reading an inbox twice gives the same answer
// and leaves every row and event as it was; only an acknowledgement makes a
// message read.
func TestQueryNeverChangesState(t *testing.T) {
	t.Parallel()
	h := queryFixture(t)
	builder := h.as("builder", false)
	ctx := ctxT(t)
	snapshot := func() ([]journal.Message, int) {
		rows, err := h.ledger.History(ctx, journal.HistoryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			evs, err := h.ledger.Events(ctx, r.MessageID)
			if err != nil {
				t.Fatal(err)
			}
			n += len(evs)
		}
		return rows, n
	}
	rows, events := snapshot()
	var first, second proto.InboxResult
	for _, out := range []*proto.InboxResult{&first, &second} {
		if err := query(t, builder, proto.QueryInbox, proto.InboxQuery{}, out); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{proto.QuerySearch, proto.QueryGet, proto.QueryTimeline, proto.QueryStatus} {
			payload := map[string]any{proto.QuerySearch: proto.SearchQuery{Query: "zebra"}, proto.QueryGet: proto.GetQuery{MessageIDs: []string{"a1"}},
				proto.QueryTimeline: proto.TimelineQuery{MessageID: "a1"}, proto.QueryStatus: nil}[op]
			if err := query(t, builder, op, payload, nil); err != nil {
				t.Fatal(op, err)
			}
		}
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two reads differ:\n%+v\n%+v", first, second)
	}
	if rows2, events2 := snapshot(); !reflect.DeepEqual(rows, rows2) || events != events2 {
		t.Fatalf("reading changed the ledger: %d → %d events", events, events2)
	}
	// An acknowledgement does make a1 read.
	if err := builder.WriteJSON(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: "a1"}); err != nil {
		t.Fatal(err)
	}
	var after proto.InboxResult
	if err := query(t, builder, proto.QueryInbox, proto.InboxQuery{}, &after); err != nil {
		t.Fatal(err)
	}
	if got := viewIDs(after.Messages); !reflect.DeepEqual(got, []string{"ask", "all1"}) || after.Unread != 2 {
		t.Fatalf("after message-ack: %v unread %d", got, after.Unread)
	}
}

func TestQueryNeedsRegister(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.dial()
	err := c.Request(ctxT(t), proto.Frame{Type: proto.TypeQuery, Op: proto.QueryInbox, RequestID: "r"}, proto.TypeResponse, nil)
	var pe *proto.Error
	if !errors.As(err, &pe) || pe.Code != status.CodeNotRegistered {
		t.Fatalf("query before register: %v", err)
	}
}
