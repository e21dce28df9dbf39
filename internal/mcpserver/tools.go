package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
)

// SendInput is hm_send's arguments.
type SendInput struct {
	To          string `json:"to" jsonschema:"the target: a role (architect, builder, oracle, builder-bg-1…), its header, pane id or alias, or all, user, telegram"`
	Body        string `json:"body" jsonschema:"the message; the hub puts your header (ROLE #N): in front unless the body starts with it. Priority tags go at the very start: [ACK REQUIRED], [URGENT], [FYI], [TASK]"`
	Priority    string `json:"priority,omitempty" jsonschema:"urgent jumps the target pane's queue"`
	AckRequired bool   `json:"ack_required,omitempty" jsonschema:"the target must answer: opens an obligation, like [ACK REQUIRED]"`
	ReplyTo     string `json:"reply_to,omitempty" jsonschema:"the messageId this answers: recorded as metadata replyTo, and its HEADER #N is added to the body when the body does not name it (which answers an [ACK REQUIRED] you owe on it)"`
	MessageID   string `json:"message_id,omitempty" jsonschema:"your own id (letters, digits, - _ . :), so that a retry is not sent twice; generated when absent"`
}

// InboxInput is hm_inbox's arguments.
type InboxInput struct {
	SinceSeq      int64 `json:"since_seq,omitempty" jsonschema:"only messages after this cursor (the cursor of an earlier hm_inbox); a ledger position, not a header number"`
	UnreadOnly    bool  `json:"unread_only,omitempty" jsonschema:"only messages not acknowledged yet (not delivered.verified)"`
	Limit         int   `json:"limit,omitempty" jsonschema:"at most this many messages, oldest first"`
	IncludeBodies bool  `json:"include_bodies,omitempty" jsonschema:"full bodies; false gives each a short snippet"`
}

// AckInput is hm_ack's arguments.
type AckInput struct {
	MessageIDs []string `json:"message_ids" jsonschema:"the ids to acknowledge (the [hm:<id>] marker of a typed message, or messageId from hm_inbox)"`
	Note       string   `json:"note,omitempty" jsonschema:"a short answer for the senders: it goes with the ACK message hm_ack sends them"`
}

// AckResult is one message's outcome in hm_ack.
type AckResult struct {
	MessageID string `json:"messageId"`
	// Status is delivered.verified, or the refusal: not_found,
	// role_mismatch (not a message to your role), journal_unavailable.
	Status string `json:"status" jsonschema:"delivered.verified, or why not: not_found, role_mismatch (not a message to your role)"`
	Reason string `json:"reason,omitempty"`
	// Answered is the HEADER #N an ACK message was sent for (an [ACK
	// REQUIRED] obligation you owed is closed by it).
	Answered string `json:"answered,omitempty" jsonschema:"the HEADER #N named by the ACK message sent to its sender"`
}

// AckOutput is hm_ack's result: each message's outcome, and the ACK
// messages sent to their senders (the send-acks).
type AckOutput struct {
	Acked   []AckResult `json:"acked"`
	Replies []proto.Ack `json:"replies" jsonschema:"the send-acks of the ACK messages sent to the senders"`
}

// SearchInput is hm_search's arguments.
type SearchInput struct {
	Query   string `json:"query" jsonschema:"full-text query: words, \"a phrase\", AND, OR, NOT, prefix*"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many hits, newest first"`
	Session string `json:"session,omitempty" jsonschema:"current, N or app-session-N; every session when absent"`
	From    string `json:"from,omitempty" jsonschema:"only messages from this sender (role, header, pane id or alias)"`
	To      string `json:"to,omitempty" jsonschema:"only messages to this target (role, header, pane id, alias, all or user)"`
}

// TimelineInput is hm_timeline's arguments.
type TimelineInput struct {
	MessageID string `json:"message_id" jsonschema:"the message in the middle"`
	Before    int    `json:"before,omitempty" jsonschema:"messages before it, in its session"`
	After     int    `json:"after,omitempty" jsonschema:"messages after it, in its session"`
}

// GetInput is hm_get's arguments.
type GetInput struct {
	MessageIDs []string `json:"message_ids" jsonschema:"the ids of the messages to read in full"`
}

// StatusInput is hm_status's arguments: none.
type StatusInput struct{}

// Priorities hm_send accepts.
var priorities = func() []any {
	out := make([]any, len(status.Priorities))
	for i, p := range status.Priorities {
		out[i] = p
	}
	return out
}()

func (s *Server) addTools() {
	// Hints: no tool destroys anything; only hm_send reaches beyond the team (Telegram).
	closed, open := false, true
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed}
	addTool(s.mcp, &mcp.Tool{Name: ToolSend, Title: "Send a message",
		Description: "Send a message to a team member (or all, user, telegram) through the hm hub. Returns the hub's send-ack: ok, status (accepted.unverified, delivered.websocket, delivered.verified), seq and header. You may send only as your own role.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &closed, OpenWorldHint: &open}},
		s.send, func(p props) {
			p["priority"].Enum = priorities
			p["priority"].Default = json.RawMessage(`"normal"`)
			p["to"].MinLength = new(1)
			p["body"].MinLength = new(1)
		})
	addTool(s.mcp, &mcp.Tool{Name: ToolInbox, Title: "Read your inbox",
		Description: "List the messages your role received this session, oldest first, with a cursor to read on. Reading never changes anything: a message stays unread until hm_ack.",
		Annotations: readOnly},
		s.inbox, func(p props) {
			p["unread_only"].Default = json.RawMessage("true")
			p["include_bodies"].Default = json.RawMessage("true")
			p["limit"].Default = json.RawMessage("20")
			p["limit"].Minimum, p["limit"].Maximum = new(1.0), new(float64(proto.MaxQueryLimit))
			p["since_seq"].Minimum = new(0.0)
		})
	addTool(s.mcp, &mcp.Tool{Name: ToolAck, Title: "Acknowledge messages",
		Description: "Acknowledge messages sent to your role: each becomes delivered.verified. For an [ACK REQUIRED] message (and for any message when you give a note) an ACK message naming it (\"ACK ARCH #12: note\") goes to its sender, which closes the obligation.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &closed, OpenWorldHint: &closed}},
		s.ack, idList)
	addTool(s.mcp, &mcp.Tool{Name: ToolSearch, Title: "Search messages",
		Description: "Full-text search over the messages your role sent or received (all sessions unless session is given). Returns compact hits, newest first: id, header, seq, snippet. Follow up with hm_timeline or hm_get.",
		Annotations: readOnly},
		s.search, func(p props) {
			p["query"].MinLength = new(1)
			p["limit"].Default = json.RawMessage("20")
			p["limit"].Minimum, p["limit"].Maximum = new(1.0), new(float64(proto.MaxQueryLimit))
		})
	addTool(s.mcp, &mcp.Tool{Name: ToolTimeline, Title: "Messages around one",
		Description: "The messages just before and after one, in its session, that your role sent or received, each with a preview.",
		Annotations: readOnly},
		s.timeline, func(p props) {
			for _, k := range []string{"before", "after"} {
				p[k].Default = json.RawMessage("5")
				p[k].Minimum, p[k].Maximum = new(0.0), new(float64(proto.MaxAround))
			}
		})
	addTool(s.mcp, &mcp.Tool{Name: ToolGet, Title: "Read messages in full",
		Description: "Messages in full: body, delivery state, ledger events and [ACK REQUIRED] obligation. Ids you may not read are listed as missing.",
		Annotations: readOnly},
		s.get, idList)
	addTool(s.mcp, &mcp.Tool{Name: ToolStatus, Title: "Team status",
		Description: "The team's panes and their states, the [ACK REQUIRED] messages you must answer (obligations) and those others owe you (awaiting), and your unread count.",
		Annotations: readOnly},
		s.status, nil)
}

type props = map[string]*jsonschema.Schema

// idList makes message_ids a list (not null) of 1 to proto.MaxGetIDs ids.
func idList(p props) {
	ids := p["message_ids"]
	ids.Type, ids.Types = "array", nil
	ids.MinItems, ids.MaxItems = new(1), new(proto.MaxGetIDs)
	ids.Items.MinLength = new(1)
}

// typeSchemas are the schemas of types the SDK's inference gets wrong:
// json.RawMessage is any JSON value, not an array of bytes.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): {}}

// addTool registers a typed tool whose input and output schemas come from
// In and Out, with edit adding defaults and bounds to the input's
// properties.
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out], edit func(props)) {
	in, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(fmt.Sprintf("%s input schema: %v", t.Name, err))
	}
	if edit != nil {
		edit(in.Properties)
	}
	out, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(fmt.Sprintf("%s output schema: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = in, out
	mcp.AddTool(s, t, h)
}

func (s *Server) send(ctx context.Context, _ *mcp.CallToolRequest, in SendInput) (*mcp.CallToolResult, proto.Ack, error) {
	id := in.MessageID
	if id == "" {
		id = msgid.New(time.Now())
	}
	var ack proto.Ack
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		body := in.Body
		// A pane token can send only as its role, and the hub refuses any
		// other header; the operator token may send as anyone, so the
		// server holds it to the role it registered as.
		if h, _, ok := roles.ParseHeader(body); ok {
			me, err := hs.whoami(ctx)
			if err != nil {
				return err
			}
			if !strings.EqualFold(h.Role, me.header) {
				return proto.Errorf(status.CodeRoleMismatch, fmt.Sprintf("the body's header names %s, but you are %s (%s); leave the header out and the hub adds yours", h.Role, hs.reg.Role, me.header))
			}
		}
		var meta json.RawMessage
		if in.ReplyTo != "" {
			var got proto.GetResult
			if err := hs.query(ctx, proto.QueryGet, proto.GetQuery{MessageIDs: []string{in.ReplyTo}}, &got); err != nil {
				return err
			}
			if len(got.Messages) == 0 {
				return proto.Errorf(status.CodeNotFound, "reply_to: no message "+in.ReplyTo+" that you sent or received")
			}
			if ref := got.Messages[0].Ref; ref != "" && !mentions(body, ref) {
				body += " (re " + ref + ")"
			}
			meta, _ = json.Marshal(map[string]string{"replyTo": in.ReplyTo})
		}
		var err error
		ack, err = hs.send(ctx, proto.Frame{Type: proto.TypeSend, RequestID: hs.requestID(), Target: in.To, Content: body,
			MessageID: id, Priority: in.Priority, AckRequired: &in.AckRequired, Metadata: meta})
		return err
	})
	if err != nil {
		return nil, proto.Ack{}, err
	}
	ack.RequestID = "" // the server's own, on its connection
	if !ack.OK {
		return refused(ack), ack, nil
	}
	return nil, ack, nil
}

// refused is the tool result of a refused send: an error the agent sees,
// with the ACK as structured content.
func refused(ack proto.Ack) *mcp.CallToolResult {
	text := "refused: " + ack.Status
	if ack.Reason != "" {
		text += ": " + ack.Reason
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// mentions reports whether body references ref ("ARCH #12"), as the hub
// reads references (roles.Refs).
func mentions(body, ref string) bool {
	for _, r := range roles.Refs(body) {
		if strings.EqualFold(r, ref) {
			return true
		}
	}
	return false
}

func (s *Server) inbox(ctx context.Context, _ *mcp.CallToolRequest, in InboxInput) (*mcp.CallToolResult, proto.InboxResult, error) {
	var out proto.InboxResult
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		return hs.query(ctx, proto.QueryInbox, proto.InboxQuery{SinceSeq: in.SinceSeq, UnreadOnly: &in.UnreadOnly, Limit: in.Limit, IncludeBodies: &in.IncludeBodies}, &out)
	})
	for i := range out.Messages {
		out.Messages[i].Body = roles.ViewContent(out.Messages[i].Body)
	}
	return nil, out, err
}

func (s *Server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, proto.SearchResult, error) {
	var out proto.SearchResult
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		return hs.query(ctx, proto.QuerySearch, proto.SearchQuery{Query: in.Query, Limit: in.Limit, Session: in.Session, From: in.From, To: in.To}, &out)
	})
	return nil, out, err
}

func (s *Server) timeline(ctx context.Context, _ *mcp.CallToolRequest, in TimelineInput) (*mcp.CallToolResult, proto.TimelineResult, error) {
	var out proto.TimelineResult
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		return hs.query(ctx, proto.QueryTimeline, proto.TimelineQuery{MessageID: in.MessageID, Before: &in.Before, After: &in.After}, &out)
	})
	return nil, out, err
}

func (s *Server) get(ctx context.Context, _ *mcp.CallToolRequest, in GetInput) (*mcp.CallToolResult, proto.GetResult, error) {
	var out proto.GetResult
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		return hs.query(ctx, proto.QueryGet, proto.GetQuery{MessageIDs: in.MessageIDs}, &out)
	})
	for i := range out.Messages {
		out.Messages[i].Body = roles.ViewContent(out.Messages[i].Body)
	}
	return nil, out, err
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, _ StatusInput) (*mcp.CallToolResult, proto.StatusResult, error) {
	var out proto.StatusResult
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		return hs.query(ctx, proto.QueryStatus, proto.StatusQuery{}, &out)
	})
	return nil, out, err
}

// ack acknowledges each message with the hub's message-ack (the same
// frame a listener or `hm receipt` sends: the row becomes acked /
// delivered.verified), then answers the senders: one ACK message per
// sender naming the refs of the messages that asked for an answer ([ACK
// REQUIRED] obligations this role owes), or of every acknowledged message
// from it when a note is given. That message closes the obligations the
// way any answer does (SPEC §10).
func (s *Server) ack(ctx context.Context, _ *mcp.CallToolRequest, in AckInput) (*mcp.CallToolResult, AckOutput, error) {
	out := AckOutput{Acked: []AckResult{}, Replies: []proto.Ack{}}
	if len(in.Note) > proto.MaxMessageFrame {
		// Refused before anything is acknowledged: no ACK message could carry it.
		return nil, out, proto.Errorf(status.CodeTooLarge, fmt.Sprintf("note is %d bytes; the limit is %d", len(in.Note), proto.MaxMessageFrame))
	}
	ids := dedupe(in.MessageIDs)
	replyIDs := map[string]string{} // requester -> the ACK message's id, fixed before any retry
	err := s.hub.do(ctx, func(ctx context.Context, hs session) error {
		out = AckOutput{Acked: make([]AckResult, 0, len(ids)), Replies: []proto.Ack{}}
		notMine, err := hs.notMine(ctx, ids)
		if err != nil {
			return err
		}
		var verified []string
		for _, id := range ids {
			if r, ok := notMine[id]; ok {
				out.Acked = append(out.Acked, r)
				continue
			}
			r, err := hs.acknowledge(ctx, id)
			if err != nil {
				return err
			}
			out.Acked = append(out.Acked, r)
			if r.Status == string(status.DeliveredVerified) {
				verified = append(verified, id)
			}
		}
		if len(verified) == 0 {
			return nil
		}
		var got proto.GetResult
		if err := hs.query(ctx, proto.QueryGet, proto.GetQuery{MessageIDs: verified}, &got); err != nil {
			return err
		}
		answers := answersFor(got.Messages, hs.reg.Role, in.Note != "")
		for _, a := range answers {
			body := "ACK " + strings.Join(a.refs, ", ")
			if in.Note != "" {
				body += ": " + in.Note
			}
			id, ok := replyIDs[a.to]
			if !ok {
				id = msgid.New(time.Now())
				replyIDs[a.to] = id
			}
			meta, _ := json.Marshal(map[string]any{"replyTo": a.ids[0], "acks": a.ids})
			ack, err := hs.send(ctx, proto.Frame{Type: proto.TypeSend, RequestID: hs.requestID(), Target: a.to, Content: body, MessageID: id, Metadata: meta})
			if err != nil {
				return err
			}
			ack.RequestID = ""
			out.Replies = append(out.Replies, ack)
			if !ack.OK {
				continue
			}
			for i := range out.Acked {
				if ref, ok := a.byID[out.Acked[i].MessageID]; ok {
					out.Acked[i].Answered = ref
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, AckOutput{}, err
	}
	for _, r := range out.Acked {
		if r.Status != string(status.DeliveredVerified) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ackSummary(out)}}}, out, nil
		}
	}
	return nil, out, nil
}

// notMine refuses, role_mismatch, the ids of messages the role did not
// receive, when the server holds the operator token: the hub lets the
// operator acknowledge any message, but acting as a role the server holds
// it to that role's messages, as the hub holds a pane token (and as hm_send
// holds it to the role's header). A pane token is left to the hub, and so
// is an id the get query does not know (not_found).
func (hs session) notMine(ctx context.Context, ids []string) (map[string]AckResult, error) {
	me, err := hs.whoami(ctx)
	if err != nil || !me.operator {
		return nil, err
	}
	var got proto.GetResult
	if err := hs.query(ctx, proto.QueryGet, proto.GetQuery{MessageIDs: ids}, &got); err != nil {
		return nil, err
	}
	out := map[string]AckResult{}
	for _, m := range got.Messages {
		if !me.recipient(m.MessageView) {
			out[m.MessageID] = AckResult{MessageID: m.MessageID, Status: string(status.CodeRoleMismatch),
				Reason: fmt.Sprintf("%s is for %s; %s may not acknowledge it", m.MessageID, m.To, me.role)}
		}
	}
	return out, nil
}

// acknowledge sends message-ack for id, then delivery-check with the same
// requestId: the hub handles a connection's frames in order, so a refused
// message-ack's error frame (role_mismatch) arrives first and answers the
// request; otherwise the check shows whether the row is now verified.
func (hs session) acknowledge(ctx context.Context, id string) (AckResult, error) {
	rid := hs.requestID()
	if err := hs.write(ctx, proto.Frame{Type: proto.TypeMessageAck, MessageID: id, RequestID: rid}); err != nil {
		return AckResult{}, err
	}
	if err := hs.write(ctx, proto.Frame{Type: proto.TypeDeliveryCheck, MessageID: id, RequestID: rid}); err != nil {
		return AckResult{}, err
	}
	var dc proto.DeliveryResult
	raw, err := hs.cl.Await(ctx, proto.TypeDeliveryCheckResult, rid, id)
	if err == nil {
		if err = json.Unmarshal(raw, &dc); err != nil {
			err = proto.Errorf(status.CodeInternal, "decode delivery-check-result: "+err.Error())
		}
	}
	var pe *proto.Error
	switch {
	case errors.As(err, &pe) && pe.Code != status.CodeInternal:
		return AckResult{MessageID: id, Status: string(pe.Code), Reason: pe.Message}, nil
	case err != nil:
		return AckResult{}, err
	case !dc.Known:
		return AckResult{MessageID: id, Status: string(status.CodeNotFound), Reason: "no such message"}, nil
	case dc.AckStatus != status.DeliveredVerified:
		return AckResult{MessageID: id, Status: string(dc.AckStatus), Reason: "the hub did not record the acknowledgement"}, nil
	}
	return AckResult{MessageID: id, Status: string(status.DeliveredVerified)}, nil
}

// answer is one ACK message hm_ack sends: to a sender, naming refs.
type answer struct {
	to   string
	refs []string
	ids  []string
	byID map[string]string // message id -> its ref
}

// answersFor groups the acknowledged messages that get an ACK message by
// whom it goes to: an open obligation me owes goes to its requester; with
// a note, every other message with a ref goes to its sender (never to the
// hub itself or an unverified sender, which cannot be answered).
func answersFor(msgs []proto.MessageDetail, me string, note bool) []answer {
	var out []answer
	index := map[string]int{}
	add := func(to, ref, id string) {
		i, ok := index[to]
		if !ok {
			i = len(out)
			index[to] = i
			out = append(out, answer{to: to, byID: map[string]string{}})
		}
		a := &out[i]
		if _, dup := a.byID[id]; dup {
			return
		}
		a.refs, a.ids, a.byID[id] = append(a.refs, ref), append(a.ids, id), ref
	}
	for _, m := range msgs {
		switch o := m.Obligation; {
		case o != nil && o.Open && o.Owner == me:
			add(o.Requester, o.Ref, m.MessageID)
		case note && m.Ref != "" && m.From != me && m.From != roles.RoleSystem && m.From != roles.RoleUnverified:
			add(m.From, m.Ref, m.MessageID)
		}
	}
	return out
}

func ackSummary(out AckOutput) string {
	var b strings.Builder
	for _, r := range out.Acked {
		fmt.Fprintf(&b, "%s: %s", r.MessageID, r.Status)
		if r.Reason != "" {
			b.WriteString(": " + r.Reason)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
