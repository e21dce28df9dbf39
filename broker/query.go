// This file answers query frames: an agent's inbox, full-text search, the
// timeline around a message, messages in full, and the team's status, each
// scoped to what the caller's role may read. A query only reads: it never
// changes a row, so reading a message never marks it read.

package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/journal/report"
	"hm/roles"
)

// PaneDescriber is implemented by a Panes that can describe a hosted pane
// for the status query (state, screen readiness, queue). It is optional:
// without it the status query reports each member's health.
type PaneDescriber interface {
	Describe(role string) (proto.PaneView, bool)
}

// query answers a query frame with a response, or an error frame with the
// request's id.
func (c *conn) query(f proto.Frame) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	result, err := c.b.Query(c.ctx, id, f.Op, f.Payload)
	if err != nil {
		c.sendProtoError(err, f.RequestID)
		return
	}
	c.sendJSON(proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID, OK: true, Result: result})
}

// Query runs the query op with its JSON payload for a client identified as
// id and returns its result (a proto.*Result). Refusals are *proto.Error:
// bad_request (unknown op or field, bad values, a malformed search),
// role_mismatch (a role reading another role's inbox or status),
// invalid_target (an unknown role name), not_found (a message the caller
// may not read), journal_unavailable (the ledger failed).
func (b *Broker) Query(ctx context.Context, id Identity, op string, payload json.RawMessage) (any, error) {
	switch op {
	case proto.QueryInbox:
		var q proto.InboxQuery
		if err := decodeQuery(payload, &q); err != nil {
			return nil, err
		}
		return b.inbox(ctx, id, q)
	case proto.QuerySearch:
		var q proto.SearchQuery
		if err := decodeQuery(payload, &q); err != nil {
			return nil, err
		}
		return b.search(ctx, id, q)
	case proto.QueryTimeline:
		var q proto.TimelineQuery
		if err := decodeQuery(payload, &q); err != nil {
			return nil, err
		}
		return b.timeline(ctx, id, q)
	case proto.QueryGet:
		var q proto.GetQuery
		if err := decodeQuery(payload, &q); err != nil {
			return nil, err
		}
		return b.get(ctx, id, q)
	case proto.QueryStatus:
		var q proto.StatusQuery
		if err := decodeQuery(payload, &q); err != nil {
			return nil, err
		}
		return b.status(ctx, id, q)
	}
	return nil, refuse(status.CodeBadRequest, "unknown query op %q (%s)", clip(op, 40), strings.Join(proto.QueryOps, ", "))
}

// decodeQuery reads a query's payload strictly: an unknown field is a
// bad_request, not silently ignored. No payload is an empty one.
func decodeQuery(payload json.RawMessage, v any) error {
	if len(bytes.TrimSpace(payload)) == 0 || bytes.Equal(bytes.TrimSpace(payload), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refuse(status.CodeBadRequest, "query payload: %v", err)
	}
	return nil
}

// readerFor is how role reads the ledger (journal.RoleReader): what it
// sent or received, where a main pane receives broadcasts and
// others-<another main pane>. Every read path and message-ack ask it.
func (b *Broker) readerFor(role string) journal.Reader {
	m, ok := b.Team().Lookup(role)
	main := ok && m.Role == role && !m.Background
	var peers []string
	if main {
		for _, o := range b.Team().Members() {
			peers = append(peers, o.Role)
		}
	}
	return journal.RoleReader(role, main, peers)
}

// visibleTo is what a client identified as id may read: everything for the
// operator, its role's rows for anyone else.
func (b *Broker) visibleTo(id Identity) journal.Reader {
	if id.Operator {
		return journal.Reader{}
	}
	return b.readerFor(id.Role)
}

// whose resolves the role a query reads for: the caller's own, unless the
// operator names another (a role, header, pane id, alias, or user).
func (b *Broker) whose(id Identity, named string) (string, error) {
	if strings.TrimSpace(named) == "" {
		return id.Role, nil
	}
	role, err := b.roleName(named)
	if err != nil {
		return "", err
	}
	if role != id.Role && !id.Operator {
		return "", refuse(status.CodeRoleMismatch, "%s may read only its own messages, not %s's", id.Role, role)
	}
	return role, nil
}

// roleName resolves a role named in a query to the name the ledger stores:
// a member's role, all, user, telegram, system, unverified or
// others-<role>.
func (b *Broker) roleName(name string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	switch key {
	case roles.RoleSystem, roles.RoleUnverified:
		return key, nil
	}
	if rest, ok := roles.CutOthers(key); ok {
		if m, ok := b.Team().Lookup(rest); ok {
			return roles.OthersTarget(m.Role), nil
		}
	}
	t, err := b.Team().Resolve(key)
	if err != nil {
		return "", refuse(status.CodeInvalidTarget, "%v", err)
	}
	return t.Name(), nil
}

// clampInt is v (def when 0) limited to [lo, hi].
func clampInt(v, def, lo, hi int) int {
	if v == 0 {
		v = def
	}
	return max(lo, min(v, hi))
}

func (b *Broker) inbox(ctx context.Context, id Identity, q proto.InboxQuery) (proto.InboxResult, error) {
	role, err := b.whose(id, q.Role)
	if err != nil {
		return proto.InboxResult{}, err
	}
	if q.SinceSeq < 0 || q.Limit < 0 {
		return proto.InboxResult{}, refuse(status.CodeBadRequest, "sinceSeq and limit must not be negative")
	}
	unreadOnly := q.UnreadOnly == nil || *q.UnreadOnly
	bodies := q.IncludeBodies == nil || *q.IncludeBodies
	r := b.readerFor(role)
	msgs, more, err := b.deps.Ledger.Mailbox(ctx, journal.MailboxQuery{
		SessionID: b.cfg.SessionID, Reader: r, AfterRowID: q.SinceSeq, UnreadOnly: unreadOnly,
		Limit: clampInt(q.Limit, proto.DefaultQueryLimit, 1, proto.MaxQueryLimit),
	})
	if err != nil {
		return proto.InboxResult{}, ledgerError(err)
	}
	// The first page of unread messages, when it holds them all, is the
	// count; otherwise count them (a walk over the session's rows).
	unread := len(msgs)
	if !unreadOnly || q.SinceSeq > 0 || more {
		if unread, err = b.deps.Ledger.UnreadCount(ctx, b.cfg.SessionID, r); err != nil {
			return proto.InboxResult{}, ledgerError(err)
		}
	}
	res := proto.InboxResult{Role: role, Messages: make([]proto.MessageView, 0, len(msgs)), Cursor: q.SinceSeq, More: more, Unread: unread}
	for _, m := range msgs {
		v := messageView(m, r)
		if bodies {
			v.Body = m.RawBody
		} else {
			v.Snippet = preview(m.RawBody)
		}
		res.Messages = append(res.Messages, v)
		res.Cursor = m.RowID
	}
	return res, nil
}

func (b *Broker) search(ctx context.Context, id Identity, q proto.SearchQuery) (proto.SearchResult, error) {
	if strings.TrimSpace(q.Query) == "" {
		return proto.SearchResult{}, refuse(status.CodeBadRequest, "search needs a query")
	}
	if q.Limit < 0 {
		return proto.SearchResult{}, refuse(status.CodeBadRequest, "limit must not be negative")
	}
	sq := journal.SearchQuery{Query: q.Query, Limit: clampInt(q.Limit, proto.DefaultQueryLimit, 1, proto.MaxQueryLimit), Reader: b.visibleTo(id)}
	var err error
	if sq.SessionID, err = b.sessionName(q.Session); err != nil {
		return proto.SearchResult{}, err
	}
	for _, f := range []struct {
		in  string
		out *string
	}{{q.From, &sq.From}, {q.To, &sq.To}} {
		if strings.TrimSpace(f.in) == "" {
			continue
		}
		if *f.out, err = b.roleName(f.in); err != nil {
			return proto.SearchResult{}, err
		}
	}
	hits, err := b.deps.Ledger.SearchWith(ctx, sq)
	if errors.Is(err, journal.ErrBadQuery) {
		return proto.SearchResult{}, refuse(status.CodeBadRequest, "search query %q is not a full-text query (words, \"phrases\", AND, OR, NOT, prefix*): %v", clip(q.Query, 80), err)
	}
	if err != nil {
		return proto.SearchResult{}, ledgerError(err)
	}
	mine := b.readerFor(id.Role)
	res := proto.SearchResult{Hits: make([]proto.MessageView, 0, len(hits))}
	for _, h := range hits {
		v := messageView(h.Message, mine)
		v.Snippet = h.Excerpt
		res.Hits = append(res.Hits, v)
	}
	return res, nil
}

// sessionName maps a query's session ("", "current", N, "app-session-N")
// to a session id ("" = every session).
func (b *Broker) sessionName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case s == "" || s == "all":
		return "", nil
	case s == "current":
		return b.cfg.SessionID, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, roles.SessionPrefix))
	if err != nil || n < 0 {
		return "", refuse(status.CodeBadRequest, "session %q is not current, all, N or %sN", clip(s, 40), roles.SessionPrefix)
	}
	return roles.SessionID(n), nil
}

func (b *Broker) timeline(ctx context.Context, id Identity, q proto.TimelineQuery) (proto.TimelineResult, error) {
	side := func(p *int) (int, error) {
		if p == nil {
			return proto.DefaultAround, nil
		}
		if *p < 0 {
			return 0, refuse(status.CodeBadRequest, "before and after must not be negative")
		}
		return min(*p, proto.MaxAround), nil
	}
	before, err := side(q.Before)
	if err != nil {
		return proto.TimelineResult{}, err
	}
	after, err := side(q.After)
	if err != nil {
		return proto.TimelineResult{}, err
	}
	r := b.visibleTo(id)
	anchor, err := b.readable(ctx, r, q.MessageID)
	if err != nil {
		return proto.TimelineResult{}, err
	}
	msgs, err := b.deps.Ledger.Around(ctx, anchor, before, after, r)
	if err != nil {
		return proto.TimelineResult{}, ledgerError(err)
	}
	mine := b.readerFor(id.Role)
	res := proto.TimelineResult{MessageID: anchor.MessageID, Messages: make([]proto.MessageView, 0, len(msgs))}
	for _, m := range msgs {
		v := messageView(m, mine)
		v.Snippet = preview(m.RawBody)
		res.Messages = append(res.Messages, v)
	}
	return res, nil
}

// readable returns the message id names if r may read it, else not_found
// (an unknown message and another role's look the same).
func (b *Broker) readable(ctx context.Context, r journal.Reader, id string) (journal.Message, error) {
	if strings.TrimSpace(id) == "" {
		return journal.Message{}, refuse(status.CodeBadRequest, "messageId is required")
	}
	m, err := b.deps.Ledger.Get(ctx, id)
	if errors.Is(err, journal.ErrNotFound) || err == nil && !r.Sees(m) {
		return journal.Message{}, refuse(status.CodeNotFound, "no message %s that you sent or received", clip(id, 128))
	}
	if err != nil {
		return journal.Message{}, ledgerError(err)
	}
	return m, nil
}

func (b *Broker) get(ctx context.Context, id Identity, q proto.GetQuery) (proto.GetResult, error) {
	if len(q.MessageIDs) == 0 || len(q.MessageIDs) > proto.MaxGetIDs {
		return proto.GetResult{}, refuse(status.CodeBadRequest, "get takes 1 to %d messageIds, not %d", proto.MaxGetIDs, len(q.MessageIDs))
	}
	r, mine := b.visibleTo(id), b.readerFor(id.Role)
	res := proto.GetResult{Messages: []proto.MessageDetail{}, Missing: []string{}}
	seen := map[string]bool{}
	for _, mid := range q.MessageIDs {
		if seen[mid] {
			continue
		}
		seen[mid] = true
		m, err := b.readable(ctx, r, mid)
		if proto.CodeOf(err) == status.CodeNotFound || proto.CodeOf(err) == status.CodeBadRequest {
			res.Missing = append(res.Missing, mid)
			continue
		}
		if err != nil {
			return proto.GetResult{}, err
		}
		d := proto.MessageDetail{MessageView: messageView(m, mine), Events: []proto.EventView{}}
		d.Body = m.RawBody
		evs, err := b.deps.Ledger.Events(ctx, m.MessageID)
		if err != nil {
			return proto.GetResult{}, ledgerError(err)
		}
		for _, e := range evs {
			ev := proto.EventView{Event: e.Event, AtMs: e.AtMs}
			if len(e.Detail) > 0 && json.Valid(e.Detail) {
				ev.Detail = json.RawMessage(e.Detail)
			}
			d.Events = append(d.Events, ev)
		}
		o, found, err := b.deps.Ledger.ObligationOf(ctx, m.MessageID)
		if err != nil {
			return proto.GetResult{}, ledgerError(err)
		}
		if found {
			ov := obligationView(o)
			d.Obligation = &ov
		}
		res.Messages = append(res.Messages, d)
	}
	return res, nil
}

func (b *Broker) status(ctx context.Context, id Identity, q proto.StatusQuery) (proto.StatusResult, error) {
	role, err := b.whose(id, q.Role)
	if err != nil {
		return proto.StatusResult{}, err
	}
	res := proto.StatusResult{Role: role, Header: b.Team().HeaderFor(role), Operator: id.Operator, SessionID: b.cfg.SessionID,
		Panes: []proto.PaneView{}, Obligations: []proto.ObligationView{}, Awaiting: []proto.ObligationView{}}
	if m, ok := b.Team().Lookup(role); ok && m.Role == role {
		res.PaneID = m.PaneID
	}
	for _, m := range b.Team().Members() {
		res.Panes = append(res.Panes, b.paneView(m))
	}
	for _, m := range b.Team().BackgroundMembers() {
		if b.deps.Background != nil && b.deps.Background.Running(m.Role) {
			res.Panes = append(res.Panes, b.paneView(m))
		}
	}
	obs, _, err := b.OpenObligations(ctx, role)
	if err != nil {
		return proto.StatusResult{}, ledgerError(err)
	}
	for _, o := range obs {
		if o.Owner == role {
			res.Obligations = append(res.Obligations, o)
		} else {
			res.Awaiting = append(res.Awaiting, o)
		}
	}
	if res.Unread, err = b.deps.Ledger.UnreadCount(ctx, b.cfg.SessionID, b.readerFor(role)); err != nil {
		return proto.StatusResult{}, ledgerError(err)
	}
	return res, nil
}

// paneView describes a team member: its hosted pane when it has one, else
// its health (SPEC §5.2 health-check).
func (b *Broker) paneView(m roles.Member) proto.PaneView {
	h := b.health(proto.Frame{Target: m.Role})
	v := proto.PaneView{Role: m.Role, PaneID: m.PaneID, Header: m.Header, Background: m.Background, State: h.Status, LastSeen: h.LastSeen}
	if b.deps.Panes != nil {
		if d, ok := b.deps.Panes.(PaneDescriber); ok {
			if pv, ok := d.Describe(m.Role); ok {
				v.Hosted, v.State, v.Readiness, v.Waiting, v.Queued = true, pv.State, pv.Readiness, pv.Waiting, pv.Queued
			}
		} else if state, _, ok := b.deps.Panes.Health(m.Role); ok {
			v.Hosted, v.State = true, state
		}
	}
	b.mu.Lock()
	v.Listening = len(b.listeners[m.Role]) > 0
	b.mu.Unlock()
	return v
}

// messageView shows m to a caller whose own mailbox is mine (Unread says
// whether mine received it without proof of receipt).
func messageView(m journal.Message, mine journal.Reader) proto.MessageView {
	v := proto.MessageView{
		MessageID: m.MessageID, Cursor: m.RowID, SessionID: m.SessionID, From: m.SenderRole, To: m.TargetRole,
		Header: m.Header, Seq: m.Seq, Ref: m.Ref(), Priority: m.Priority, Channel: m.Channel, AtMs: m.BrokeredAtMs,
		Status: m.Status, AckStatus: m.AckStatus, ErrorCode: m.ErrorCode, Bytes: m.BodyBytes,
		Unread: mine.Received(m) && journal.Unread(m), Tags: shownTags(m),
	}
	if strings.Contains(m.MetadataJSON, `"replyTo"`) {
		var meta struct {
			ReplyTo string `json:"replyTo"`
		}
		if json.Unmarshal([]byte(m.MetadataJSON), &meta) == nil {
			v.ReplyTo = meta.ReplyTo
		}
	}
	return v
}

// OpenObligations lists the open obligations role owes or is owed ("" for
// every role), oldest first, by the one rule of journal/report
// (report.OpenObligations: this session's and the previous session's) that
// hm status, the cockpit and the briefing share; more says the list was
// cut at report.ObligationListLimit.
func (b *Broker) OpenObligations(ctx context.Context, role string) ([]proto.ObligationView, bool, error) {
	o := report.Options{SessionID: b.cfg.SessionID, Session: b.cfg.Session}
	obs, more, err := report.OpenObligations(ctx, b.deps.Ledger, o, role, report.ObligationListLimit)
	if err != nil {
		return nil, false, err
	}
	out := make([]proto.ObligationView, 0, len(obs))
	for _, ob := range obs {
		out = append(out, obligationView(ob.Obligation))
	}
	return out, more, nil
}

func obligationView(o journal.Obligation) proto.ObligationView {
	return proto.ObligationView{MessageID: o.MessageID, SessionID: o.SessionID, Owner: o.OwnerRole, Requester: o.RequesterRole, Ref: o.Ref,
		OpenedAtMs: o.OpenedAtMs, RemindedAtMs: o.RemindedAtMs, Open: o.ClosedBy == "", ClosedBy: o.ClosedBy, ClosedAtMs: o.ClosedAtMs}
}

// preview is the start of a body for a list: whitespace collapsed, at most
// proto.PreviewChars characters.
func preview(body string) string {
	s := strings.Join(strings.Fields(body), " ")
	if utf8.RuneCountInString(s) <= proto.PreviewChars {
		return s
	}
	r := []rune(s)
	return string(r[:proto.PreviewChars-1]) + "…"
}

// ledgerError is a ledger failure as a query refusal.
func ledgerError(err error) error {
	return refuse(status.CodeJournalUnavailable, "%v", err)
}
