package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/internal/mcpserver"
	"hm/journal"
)

// TestToolsListGolden: tools/list (names, descriptions, annotations, input
// and output schemas) is what testdata/tools.golden.json holds; -update
// rewrites it.
func TestToolsListGolden(t *testing.T) {
	t.Parallel()
	srv := mcpserver.New(mcpserver.Config{Version: "test", Dial: func(context.Context) (*client.Client, proto.Registered, error) {
		return nil, proto.Registered{}, errors.New("no hub in this test")
	}})
	defer srv.Close()
	st, ct := mcp.NewInMemoryTransports()
	ctx := t.Context()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "golden", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("%s lacks a schema or a description", tool.Name)
		}
	}
	want := []string{mcpserver.ToolAck, mcpserver.ToolGet, mcpserver.ToolInbox, mcpserver.ToolSearch, mcpserver.ToolSend, mcpserver.ToolStatus, mcpserver.ToolTimeline}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res.Tools); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/mcpserver -run TestToolsListGolden -update to create it)", err)
	}
	if !bytes.Equal(got, golden) {
		t.Fatalf("tools/list differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
}

// TestSession drives `hm mcp` subprocesses through the SDK's command
// transport against a real hub: architect and builder with their pane
// tokens, and the operator token registered as builder.
func TestSession(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	archTok, builderTok := h.Tokens.Issue("architect"), h.Tokens.Issue("builder")
	arch, _ := connect(t, env(h.root, "HM_TOKEN="+archTok, "SQUIDRUN_ROLE=architect"))
	builder, _ := connect(t, env(h.root, "HM_TOKEN="+builderTok, "SQUIDRUN_ROLE=builder"))
	opBuilder, _ := connect(t, env(h.root), "--role", "builder") // operator token from runtime/hub-token
	ctx := t.Context()
	var quokka string // the id of the message hm_search looks for

	t.Run("hm_send writes the same row and ACK as the WebSocket path", func(t *testing.T) {
		ws, err := client.Dial(ctx, h.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if _, err := ws.Register(ctx, "architect", archTok, false); err != nil {
			t.Fatal(err)
		}
		body := "[ACK REQUIRED] review the parser"
		wsAck, _, err := ws.Send(ctx, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: body, MessageID: "ws-1"})
		if err != nil {
			t.Fatal(err)
		}
		mcpAck := result[proto.Ack](t, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": body, "message_id": "mcp-1"})
		if !wsAck.OK || !mcpAck.OK || mcpAck.Seq != wsAck.Seq+1 || mcpAck.MessageID != "mcp-1" {
			t.Fatalf("acks: ws %+v, mcp %+v", wsAck, mcpAck)
		}
		for _, a := range []*proto.Ack{&wsAck, &mcpAck} {
			a.MessageID, a.Seq, a.AckLatencyMs, a.RequestID = "", 0, 0, ""
		}
		if !reflect.DeepEqual(wsAck, mcpAck) {
			t.Fatalf("the ACKs differ:\nws  %+v\nmcp %+v", wsAck, mcpAck)
		}
		var rows []journal.Message
		var events [][]status.Event
		for _, id := range []string{"ws-1", "mcp-1"} {
			m, err := h.Ledger.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := h.Ledger.Events(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var names []status.Event
			for _, e := range evs {
				names = append(names, e.Event)
			}
			events = append(events, names)
			m.RowID, m.MessageID, m.Seq, m.BodyHash, m.SentAtMs, m.BrokeredAtMs, m.UpdatedAtMs = 0, "", 0, "", 0, 0, 0
			m.RawBody = regexp.MustCompile(`#\d+`).ReplaceAllString(m.RawBody, "#N")
			rows = append(rows, m)
		}
		if !reflect.DeepEqual(rows[0], rows[1]) || !reflect.DeepEqual(events[0], events[1]) {
			t.Fatalf("the ledger rows differ:\nws  %+v %v\nmcp %+v %v", rows[0], events[0], rows[1], events[1])
		}
		if rows[1].Channel != "ws" || rows[1].SenderRole != "architect" || rows[1].RawBody != "(ARCH #N): "+body {
			t.Fatalf("row %+v", rows[1])
		}
	})

	t.Run("role_mismatch", func(t *testing.T) {
		tests := []struct {
			name    string
			cs      *mcp.ClientSession
			body    string
			refused bool
		}{
			{"a pane token: the hub refuses", arch, "(BUILDER #7): pretending", true},
			{"the operator token acting as builder: the server refuses", opBuilder, "(ARCH #7): pretending", true},
			{"the own header is fine", opBuilder, "(BUILDER #0): numbered by the hub", false},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := "rm-" + strconv.Itoa(i)
				res := call(t, tt.cs, mcpserver.ToolSend, map[string]any{"to": "oracle", "body": tt.body, "message_id": id})
				_, err := h.Ledger.Get(ctx, id)
				switch {
				case tt.refused && (!res.IsError || !strings.Contains(text(res), string(status.CodeRoleMismatch))):
					t.Fatalf("want role_mismatch, got %v %s", res.IsError, text(res))
				case tt.refused && !errors.Is(err, journal.ErrNotFound):
					t.Fatalf("a refused send was stored: %v", err)
				case !tt.refused && (res.IsError || err != nil):
					t.Fatalf("refused: %s %v", text(res), err)
				}
			})
		}
	})

	t.Run("hm_inbox twice returns the same and changes nothing", func(t *testing.T) {
		var answers [][]byte
		var before []journal.Message
		for range 2 {
			res := call(t, builder, mcpserver.ToolInbox, nil)
			if res.IsError {
				t.Fatal(text(res))
			}
			raw, _ := json.Marshal(res.StructuredContent)
			answers = append(answers, raw)
			in := decode[proto.InboxResult](t, res)
			var rows []journal.Message
			for _, m := range in.Messages {
				row, err := h.Ledger.Get(ctx, m.MessageID)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
			if before != nil && !reflect.DeepEqual(before, rows) {
				t.Fatalf("reading changed rows:\n%+v\n%+v", before, rows)
			}
			before = rows
			if got := ids(in.Messages); !slices.Contains(got, "ws-1") || !slices.Contains(got, "mcp-1") || in.Unread != len(got) || in.Role != "builder" {
				t.Fatalf("inbox %v unread %d", got, in.Unread)
			}
		}
		if !bytes.Equal(answers[0], answers[1]) {
			t.Fatalf("two reads differ:\n%s\n%s", answers[0], answers[1])
		}
	})

	t.Run("hm_search finds a message within 1s of its commit", func(t *testing.T) {
		ack := result[proto.Ack](t, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": "the quokkaward benchmark is ready"})
		quokka = ack.MessageID
		deadline := time.Now().Add(time.Second) // the commit happened before the ACK
		for {
			hits := result[proto.SearchResult](t, builder, mcpserver.ToolSearch, map[string]any{"query": "quokkaward"}).Hits
			if len(hits) == 1 && hits[0].MessageID == ack.MessageID {
				if h := hits[0]; h.Header != "ARCH" || h.Seq != ack.Seq || !strings.Contains(h.Snippet, "[quokkaward]") || h.Body != "" {
					t.Fatalf("hit %+v", h)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not found within 1s of its commit: %+v", hits)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("hm_ack verifies and answers the obligations", func(t *testing.T) {
		if st := result[proto.StatusResult](t, builder, mcpserver.ToolStatus, nil); len(st.Obligations) != 2 {
			t.Fatalf("builder owes %+v", st.Obligations)
		}
		out := result[mcpserver.AckOutput](t, builder, mcpserver.ToolAck, map[string]any{"message_ids": []string{"mcp-1", "ws-1", "mcp-1"}})
		if len(out.Acked) != 2 || len(out.Replies) != 1 || !out.Replies[0].OK {
			t.Fatalf("ack %+v", out)
		}
		for _, r := range out.Acked {
			if r.Status != string(status.DeliveredVerified) || r.Answered == "" {
				t.Fatalf("ack result %+v", r)
			}
		}
		for _, id := range []string{"mcp-1", "ws-1"} {
			if m, _ := h.Ledger.Get(ctx, id); m.AckStatus != status.DeliveredVerified || m.Status != status.Acked {
				t.Fatalf("%s: %s/%s", id, m.Status, m.AckStatus)
			}
		}
		if st := result[proto.StatusResult](t, builder, mcpserver.ToolStatus, nil); len(st.Obligations) != 0 {
			t.Fatalf("still owed: %+v", st.Obligations)
		}
		reply := out.Replies[0].MessageID
		got := result[proto.GetResult](t, arch, mcpserver.ToolGet, map[string]any{"message_ids": []string{"ws-1", reply}})
		if len(got.Messages) != 2 || got.Messages[0].Obligation == nil || got.Messages[0].Obligation.Open || got.Messages[0].Obligation.ClosedBy != reply {
			t.Fatalf("get %+v", got)
		}
		if m := got.Messages[1]; m.Body != "(BUILDER #2): ACK ARCH #2, ARCH #1" || m.From != "builder" || m.To != "architect" || !m.Unread {
			t.Fatalf("the ACK message %+v", m)
		}
		in := result[proto.InboxResult](t, builder, mcpserver.ToolInbox, nil)
		if got := ids(in.Messages); slices.Contains(got, "mcp-1") || slices.Contains(got, "ws-1") {
			t.Fatalf("acknowledged messages are still unread: %v", got)
		}
		// No obligation, but a note: the sender is answered all the same.
		noted := result[mcpserver.AckOutput](t, builder, mcpserver.ToolAck, map[string]any{"message_ids": []string{quokka}, "note": "numbers look right"})
		if len(noted.Replies) != 1 || noted.Acked[0].Answered != "ARCH #3" {
			t.Fatalf("ack with a note %+v", noted)
		}
		got = result[proto.GetResult](t, arch, mcpserver.ToolGet, map[string]any{"message_ids": []string{noted.Replies[0].MessageID}})
		if got.Messages[0].Body != "(BUILDER #3): ACK ARCH #3: numbers look right" {
			t.Fatalf("the noted ACK %+v", got.Messages[0])
		}
		// Not builder's to acknowledge, and unknown.
		res := call(t, builder, mcpserver.ToolAck, map[string]any{"message_ids": []string{reply, "nope"}})
		bad := decode[mcpserver.AckOutput](t, res)
		if !res.IsError || len(bad.Acked) != 2 || bad.Acked[0].Status != string(status.CodeRoleMismatch) || bad.Acked[1].Status != string(status.CodeNotFound) || len(bad.Replies) != 0 {
			t.Fatalf("bad acks: %v %+v", res.IsError, bad)
		}
	})

	t.Run("reply_to, hm_timeline, hm_get", func(t *testing.T) {
		ack := result[proto.Ack](t, builder, mcpserver.ToolSend, map[string]any{"to": "arch", "body": "merged", "reply_to": "mcp-1"})
		got := result[proto.GetResult](t, builder, mcpserver.ToolGet, map[string]any{"message_ids": []string{ack.MessageID}})
		if m := got.Messages[0]; m.ReplyTo != "mcp-1" || m.Body != "(BUILDER #4): merged (re ARCH #2)" || len(m.Events) == 0 {
			t.Fatalf("reply %+v", m)
		}
		tl := result[proto.TimelineResult](t, builder, mcpserver.ToolTimeline, map[string]any{"message_id": "mcp-1", "before": 1, "after": 1})
		if got := ids(tl.Messages); !reflect.DeepEqual(got, []string{"ws-1", "mcp-1", "rm-2"}) || tl.Messages[1].Snippet == "" || tl.Messages[1].Body != "" {
			t.Fatalf("timeline %v", got)
		}
		private := result[proto.Ack](t, arch, mcpserver.ToolSend, map[string]any{"to": "oracle", "body": "between us"})
		if res := call(t, builder, mcpserver.ToolTimeline, map[string]any{"message_id": private.MessageID}); !res.IsError || !strings.Contains(text(res), string(status.CodeNotFound)) {
			t.Fatalf("another role's message: %s", text(res))
		}
		if got := result[proto.GetResult](t, builder, mcpserver.ToolGet, map[string]any{"message_ids": []string{private.MessageID}}); len(got.Messages) != 0 || len(got.Missing) != 1 {
			t.Fatalf("get of another role's message: %+v", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		tests := []struct {
			name, tool string
			args       any
			want       string
		}{
			{"unknown argument", mcpserver.ToolInbox, map[string]any{"bogus": 1}, "bogus"},
			{"missing body", mcpserver.ToolSend, map[string]any{"to": "arch"}, "body"},
			{"empty body", mcpserver.ToolSend, map[string]any{"to": "arch", "body": ""}, "body"},
			{"limit out of range", mcpserver.ToolInbox, map[string]any{"limit": 1000}, "limit"},
			{"wrong type", mcpserver.ToolGet, map[string]any{"message_ids": "ws-1"}, "message_ids"},
			{"unknown priority", mcpserver.ToolSend, map[string]any{"to": "arch", "body": "x", "priority": "asap"}, "priority"},
			{"unknown target", mcpserver.ToolSend, map[string]any{"to": "bilder", "body": "x"}, "invalid_target"},
			{"bad message id", mcpserver.ToolSend, map[string]any{"to": "arch", "body": "x", "message_id": "../x"}, "bad_request"},
			{"malformed search", mcpserver.ToolSearch, map[string]any{"query": `"open`}, "bad_request"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := call(t, builder, tt.tool, tt.args)
				if !res.IsError || !strings.Contains(text(res), tt.want) {
					t.Fatalf("want an error naming %q, got %v %s", tt.want, res.IsError, text(res))
				}
			})
		}
		if _, err := builder.CallTool(ctx, &mcp.CallToolParams{Name: "hm_nope"}); err == nil || !strings.Contains(err.Error(), "hm_nope") {
			t.Fatalf("unknown tool: %v", err)
		}
	})
}

func ids(vs []proto.MessageView) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.MessageID)
	}
	return out
}

// TestHubErrors: a tool call without a token, with a bad one, or with no
// hub fails with an error saying so, and hm mcp keeps serving; after the
// hub restarts, the next call reconnects.
func TestHubErrors(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	noHub := t.TempDir()
	if err := (layout.Layout{Root: noHub}).Ensure(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no token", env(noHub, "HM_PORT="+closedPort), "no token for the hub: $HM_TOKEN is not set and " + filepath.Join(noHub, ".squidrun", "runtime", "hub-token") + " does not exist"},
		{"a bad token", env(h.root, "HM_TOKEN=forged", "SQUIDRUN_ROLE=builder"), "unauthorized"},
		{"no hub", env(noHub, "HM_TOKEN=x", "HM_PORT="+closedPort), "no hub is running on 127.0.0.1:" + closedPort + " for " + noHub + "; start it with `hm up`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := connect(t, tt.env)
			for range 2 { // the server keeps serving
				res := call(t, cs, mcpserver.ToolStatus, nil)
				if !res.IsError || !strings.Contains(text(res), tt.want) {
					t.Fatalf("want an error with %q, got %v %q", tt.want, res.IsError, text(res))
				}
			}
		})
	}
	t.Run("reconnects after a hub restart", func(t *testing.T) {
		root := t.TempDir()
		_, stop := startHubAt(t, root)
		cs, _ := connect(t, env(root))
		if st := result[proto.StatusResult](t, cs, mcpserver.ToolStatus, nil); st.SessionID != "app-session-1" || !st.Operator {
			t.Fatalf("status %+v", st)
		}
		stop()
		startHubAt(t, root)
		if st := result[proto.StatusResult](t, cs, mcpserver.ToolStatus, nil); st.SessionID != "app-session-2" {
			t.Fatalf("after the restart: %+v", st)
		}
	})
}

// TestAckOnlyOwnMessages: hm_ack acting as a role verifies only the
// messages that role received (its target, or a broadcast another role
// sent, for a main pane), whatever token it holds: with the operator token
// (which the hub lets acknowledge anything) the server refuses the rest
// itself, role_mismatch, and sends no ACK message for them.
func TestAckOnlyOwnMessages(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	arch, _ := connect(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("architect"), "SQUIDRUN_ROLE=architect"))
	builder, _ := connect(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("builder"), "SQUIDRUN_ROLE=builder"))
	opBuilder, _ := connect(t, env(h.root), "--role", "builder") // operator token from runtime/hub-token
	ctx := t.Context()
	// answers counts the ACK messages builder sent architect.
	answers := func() int {
		n := 0
		in := result[proto.InboxResult](t, arch, mcpserver.ToolInbox, map[string]any{"unread_only": false, "limit": 200})
		for _, m := range in.Messages {
			if m.From == "builder" && strings.Contains(m.Body, ": ACK ARCH #") {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name     string
		from     *mcp.ClientSession
		to, body string
		want     status.Code // "" is delivered.verified
	}{
		{"a message to another role", arch, "oracle", "[ACK REQUIRED] for oracle only", status.CodeRoleMismatch},
		{"a message to the role", arch, "builder", "[ACK REQUIRED] for builder", ""},
		{"a broadcast another role sent", arch, "all", "for everyone", ""},
		{"the role's own broadcast", builder, "all", "from builder to everyone", status.CodeRoleMismatch},
	}
	for _, acker := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"pane token", builder}, {"operator token", opBuilder}} {
		for _, tt := range tests {
			t.Run(acker.name+"/"+tt.name, func(t *testing.T) {
				sent := result[proto.Ack](t, tt.from, mcpserver.ToolSend, map[string]any{"to": tt.to, "body": tt.body})
				before := answers()
				res := call(t, acker.cs, mcpserver.ToolAck, map[string]any{"message_ids": []string{sent.MessageID}, "note": "seen"})
				out := decode[mcpserver.AckOutput](t, res)
				m, err := h.Ledger.Get(ctx, sent.MessageID)
				if err != nil {
					t.Fatal(err)
				}
				if tt.want != "" {
					if !res.IsError || len(out.Acked) != 1 || out.Acked[0].Status != string(tt.want) || len(out.Replies) != 0 {
						t.Errorf("want %s and no reply, got %v %+v", tt.want, res.IsError, out)
					}
					if m.AckStatus == status.DeliveredVerified {
						t.Errorf("builder verified a message to %s from %s", m.TargetRole, m.SenderRole)
					}
					if n := answers(); n != before {
						t.Errorf("builder sent %d ACK messages for it", n-before)
					}
					return
				}
				if res.IsError || len(out.Acked) != 1 || out.Acked[0].Status != string(status.DeliveredVerified) || len(out.Replies) != 1 || !out.Replies[0].OK {
					t.Errorf("want delivered.verified and one reply, got %v %+v %s", res.IsError, out, text(res))
				}
				if m.AckStatus != status.DeliveredVerified {
					t.Errorf("row %s/%s", m.Status, m.AckStatus)
				}
				if n := answers(); n != before+1 {
					t.Errorf("builder sent %d ACK messages, want 1", n-before)
				}
			})
		}
	}
	t.Run("unknown id", func(t *testing.T) {
		for _, cs := range []*mcp.ClientSession{builder, opBuilder} {
			res := call(t, cs, mcpserver.ToolAck, map[string]any{"message_ids": []string{"nope"}})
			if out := decode[mcpserver.AckOutput](t, res); !res.IsError || len(out.Acked) != 1 || out.Acked[0].Status != string(status.CodeNotFound) {
				t.Errorf("want not_found, got %v %+v", res.IsError, out)
			}
		}
	})
}

// TestTooLarge: an argument that would make a frame over the hub's
// 256 KiB limit is refused by the server itself, too_large, before
// anything is written (a frame over the hub's 1 MiB socket limit used to
// reset the connection: "hub connection failed"), and the server goes on
// serving.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	arch, _ := connect(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("architect"), "SQUIDRUN_ROLE=architect"))
	builder, _ := connect(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("builder"), "SQUIDRUN_ROLE=builder"))
	opBuilder, _ := connect(t, env(h.root), "--role", "builder")
	big, over := strings.Repeat("x", 2<<20), strings.Repeat("y", proto.MaxMessageFrame+1)
	task := result[proto.Ack](t, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": "[ACK REQUIRED] task"})
	tests := []struct {
		name, tool string
		args       map[string]any
	}{
		{"hm_send, 2 MiB body", mcpserver.ToolSend, map[string]any{"to": "architect", "body": big, "message_id": "big-1"}},
		{"hm_send, a body just over 256 KiB", mcpserver.ToolSend, map[string]any{"to": "architect", "body": over, "message_id": "big-2"}},
		{"hm_ack, 2 MiB note", mcpserver.ToolAck, map[string]any{"message_ids": []string{task.MessageID}, "note": big}},
		{"hm_search, 2 MiB query", mcpserver.ToolSearch, map[string]any{"query": big}},
		{"hm_get, a 2 MiB id", mcpserver.ToolGet, map[string]any{"message_ids": []string{big}}},
		{"hm_timeline, a 2 MiB id", mcpserver.ToolTimeline, map[string]any{"message_id": big}},
	}
	for _, cs := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"pane token", builder}, {"operator token", opBuilder}} {
		for _, tt := range tests {
			t.Run(cs.name+"/"+tt.name, func(t *testing.T) {
				res := call(t, cs.cs, tt.tool, tt.args)
				if got := text(res); !res.IsError || !strings.HasPrefix(got, string(status.CodeTooLarge)+": ") {
					t.Errorf("want too_large, got %v %.200s", res.IsError, got)
				}
				if st := call(t, cs.cs, mcpserver.ToolStatus, nil); st.IsError {
					t.Errorf("hm_status after it: %.200s", text(st))
				}
			})
		}
	}
	for _, id := range []string{"big-1", "big-2"} {
		if _, err := h.Ledger.Get(t.Context(), id); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s was stored: %v", id, err)
		}
	}
	// The refused hm_ack acknowledged nothing (nor answered anything).
	if m, _ := h.Ledger.Get(t.Context(), task.MessageID); m.AckStatus == status.DeliveredVerified {
		t.Errorf("the refused hm_ack verified %s", task.MessageID)
	}
}
