// This file holds the frame handlers: one per client frame type (SPEC §5).

package broker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/coder/websocket"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// clientFrames are the frame types a client may send (SPEC §5.2).
var clientFrames = map[string]bool{
	proto.TypeRegister: true, proto.TypeSend: true, proto.TypeBroadcast: true, proto.TypeHealthCheck: true,
	proto.TypeDeliveryCheck: true, proto.TypeHeartbeat: true, proto.TypeBackgroundAgent: true,
	proto.TypeSubscribe: true, proto.TypeMessageAck: true, proto.TypeQuery: true,
	proto.TypeClaim: true, proto.TypeClaimAck: true, proto.TypeReceipt: true,
}

// handle processes one frame; false ends the connection.
func (c *conn) handle(f proto.Frame, received time.Time) bool {
	c.mu.Lock()
	registered, role := c.registered, c.role
	c.mu.Unlock()
	if f.Type == proto.TypeRegister {
		c.acksPending.Wait() // a listener's replay must see this connection's acks
		return c.register(f)
	}
	// Every frame other than register needs a registered, authenticated
	// client (SPEC §5.3): an unregistered one learns nothing, not even
	// that the hub is healthy.
	if !registered {
		if clientFrames[f.Type] {
			c.sendError(status.CodeNotRegistered, "register before sending "+f.Type+" frames", f.RequestID, f.MessageID)
		} else {
			c.sendError(status.CodeUnknownType, "unknown frame type "+clip(f.Type, 40), f.RequestID, "")
		}
		return true
	}
	c.b.touch(role)
	if f.Type != proto.TypeMessageAck && f.Type != proto.TypeSend && f.Type != proto.TypeBroadcast {
		// This connection's acks commit without the read loop waiting
		// for them; any later frame that reads (a query, a check, even
		// an unknown frame used as a barrier) sees them done. A send
		// needs no wait: the writer commits in order, the acks first.
		c.acksPending.Wait()
	}
	switch f.Type {
	case proto.TypeSend, proto.TypeBroadcast:
		c.send(f, received)
	case proto.TypeHealthCheck:
		c.sendJSON(c.b.health(f))
	case proto.TypeDeliveryCheck:
		c.mu.Lock()
		id := c.identity
		c.mu.Unlock()
		c.sendJSON(c.b.deliveryCheck(c.ctx, id, f))
	case proto.TypeHeartbeat:
		c.sendJSON(proto.HeartbeatAck{Type: proto.TypeHeartbeatAck, RequestID: f.RequestID, Timestamp: time.Now().UnixMilli()})
	case proto.TypeMessageAck:
		if f.MessageID == "" {
			c.sendError(status.CodeBadRequest, "message-ack needs messageId", f.RequestID, "")
			return true
		}
		c.mu.Lock()
		id := c.identity
		c.mu.Unlock()
		// The read loop does not wait for the commit: acks share the
		// writer's group commits. Only a refusal is answered.
		c.acksPending.Add(1)
		c.b.acknowledgeAsync(f.MessageID, id, func(err error) {
			defer c.acksPending.Done()
			var pe *proto.Error
			switch {
			case err == nil, errors.Is(err, journal.ErrNotFound):
			case errors.As(err, &pe): // role_mismatch, or bad_request for a recorded row
				c.sendError(pe.Code, pe.Message, f.RequestID, f.MessageID)
			default:
				c.sendError(status.CodeJournalUnavailable, err.Error(), f.RequestID, f.MessageID)
			}
		})
	case proto.TypeSubscribe:
		c.subscribe(f)
	case proto.TypeBackgroundAgent:
		c.background(f)
	case proto.TypeQuery:
		c.query(f)
	case proto.TypeClaim:
		c.claim(f)
	case proto.TypeClaimAck:
		c.claimAck(f)
	case proto.TypeReceipt:
		c.receipt(f)
	default:
		c.sendError(status.CodeUnknownType, "unknown frame type "+clip(f.Type, 40), f.RequestID, "")
	}
	return true
}

func (c *conn) register(f proto.Frame) bool {
	b := c.b
	role := strings.ToLower(strings.TrimSpace(f.Role))
	var id Identity
	if f.Token != "" {
		got, ok := b.cfg.Tokens.Check(f.Token)
		if !ok || (!got.Operator && role != "" && role != got.Role) {
			return c.unauthorized("token is not valid for role " + clip(role, 40))
		}
		id = got
		if !got.Operator {
			role = got.Role
		}
	} else if c.preauthOperator {
		id = Identity{Operator: true}
	} else if b.cfg.AllowAnonymous {
		id = Identity{Role: role}
	} else {
		return c.unauthorized("register needs a token")
	}
	if role == "" {
		role = roles.RoleUser
	}
	paneID := ""
	if role != roles.RoleUser {
		m, ok := b.Team().Lookup(role)
		if !ok || m.Role != role {
			if !id.Operator && f.Token != "" {
				return c.unauthorized("unknown role")
			}
			c.sendError(status.CodeInvalidTarget, "no role "+clip(role, 40)+" in this team", f.RequestID, "")
			return true
		}
		paneID = m.PaneID
	}
	if role == roles.RoleUser && !id.Operator && !b.cfg.AllowAnonymous {
		return c.unauthorized("only the operator may act as user")
	}
	if f.Ack != "" && f.Ack != ackHandover && f.Ack != ackMessageAck {
		c.sendError(status.CodeBadRequest, `ack must be "message-ack" (the default) or "handover"`, f.RequestID, "")
		return true
	}
	listening, refusal := c.reregister(role, f)
	if refusal != nil {
		c.sendError(refusal.Code, refusal.Message, f.RequestID, "")
		return true
	}
	if !c.promote() {
		return c.endWith(status.CodeCapacityReached, c.b.agents.Refusal(), websocket.StatusTryAgainLater)
	}
	id.Role = role
	c.mu.Lock()
	c.registered, c.identity, c.role = true, id, role
	c.mu.Unlock()
	b.touch(role)
	c.sendJSON(proto.Registered{Type: proto.TypeRegistered, Role: role, PaneID: paneID, ClientID: c.id})
	if f.Listen && !listening {
		c.mu.Lock()
		c.replaying = true // before any live delivery can find c (replay.go)
		c.mu.Unlock()
		b.mu.Lock()
		c.handover = f.Ack == ackHandover
		if b.listeners[role] == nil {
			b.listeners[role] = map[int64]*conn{}
		}
		b.listeners[role][c.id] = c
		b.mu.Unlock()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			b.replayPending(c, role)
		}()
	}
	return true
}

// reregister checks a register on a connection that may already be
// registered: it keeps the role it registered as (a listener stays one for
// that role only), so a register naming another role is refused with
// role_mismatch, and a listener's register must keep listening with the
// same ack policy (bad_request). A fresh connection passes. listening says
// whether c already listens for role.
func (c *conn) reregister(role string, f proto.Frame) (listening bool, refusal *proto.Error) {
	c.mu.Lock()
	registered, was := c.registered, c.role
	c.mu.Unlock()
	if !registered {
		return false, nil
	}
	if role != was {
		return false, proto.Errorf(status.CodeRoleMismatch, "this connection is registered as "+was+"; open another connection to register as "+clip(role, 40))
	}
	c.b.mu.Lock()
	_, listening = c.b.listeners[role][c.id]
	handover := c.handover
	c.b.mu.Unlock()
	switch {
	case listening && !f.Listen:
		return true, proto.Errorf(status.CodeBadRequest, "this connection listens for "+role+"; close it to stop listening")
	case listening && (f.Ack == ackHandover) != handover:
		return true, proto.Errorf(status.CodeBadRequest, "this connection listens for "+role+" with another ack policy; open another connection to change it")
	}
	return listening, nil
}

// Listener ack policies (register's "ack").
const (
	// ackMessageAck, the default: delivery is at-least-once until the
	// listener's message-ack; what it was handed and did not acknowledge
	// is offered again to the role's next listener.
	ackMessageAck = "message-ack"
	// ackHandover: handed over is done (tools that never acknowledge).
	ackHandover = "handover"
)

func (c *conn) unauthorized(why string) bool {
	return c.endWith(status.CodeUnauthorized, why, websocket.StatusPolicyViolation)
}

// endWith refuses a register for good: an error frame with code and why,
// then the close (closeCode, reason the code); it returns false once the
// writer has sent both, which ends the connection.
func (c *conn) endWith(code status.Code, why string, closeCode websocket.StatusCode) bool {
	c.b.log.Warn("register refused; closing", "client", c.id, "code", code, "why", why)
	data, _ := json.Marshal(proto.ErrorFrame{Type: proto.TypeError, Code: code, Message: why})
	c.enqueue(outFrame{data: data})
	c.enqueue(outFrame{data: []byte(code), closeWith: &closeCode})
	// Wait for the writer to send the error and close.
	<-c.ctx.Done()
	return false
}

func (c *conn) send(f proto.Frame, received time.Time) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	ackRequired := false
	if f.AckRequired != nil {
		ackRequired = *f.AckRequired
	}
	wait := time.Duration(f.WaitMs) * time.Millisecond
	if wait < 0 {
		wait = 0
	}
	if wait > 30*time.Second {
		wait = 30 * time.Second
	}
	p := c.b.begin(c.ctx, Submission{
		From:        id.Role,
		Trusted:     id.Operator,
		Target:      f.Target,
		Broadcast:   f.Type == proto.TypeBroadcast,
		Content:     f.Content,
		MessageID:   f.MessageID,
		Priority:    f.Priority,
		AckRequired: ackRequired,
		Wait:        wait,
		Metadata:    f.Metadata,
		Channel:     ChannelWS,
		Received:    received,
	})
	c.queueInflight(inflightSend{p: p, requestID: f.RequestID, target: f.Target, isSend: f.Type == proto.TypeSend})
}

// subscribe streams ledger changes to the client: the rows its identity
// may read (visibleTo, journal.Reader.Sees: the operator every row, a role
// what it sent or received and never a row the hub only recorded).
func (c *conn) subscribe(f proto.Frame) {
	want := false
	for _, t := range f.Topics {
		if t == "journal" {
			want = true
		}
	}
	if !want {
		c.sendError(status.CodeBadRequest, `subscribe supports the topic "journal"`, f.RequestID, "")
		return
	}
	c.mu.Lock()
	if c.subscribed {
		c.mu.Unlock()
		return
	}
	c.subscribed = true
	id := c.identity
	c.mu.Unlock()
	visible := c.b.visibleTo(id)
	events, cancel := c.b.deps.Ledger.Subscribe(1024)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		for {
			select {
			case <-c.ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				if !visible.Sees(ev.Row) {
					continue
				}
				c.sendJSON(proto.JournalEvent{Type: proto.TypeJournalEvent, Row: EventRow(ev)})
			}
		}
	}()
}

func (c *conn) background(f proto.Frame) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	resp := proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID}
	switch {
	case !id.Operator && id.Role != c.b.Team().Background.Owner:
		resp.Result = proto.BgRefusal{Status: status.CodeOwnerBindingViolation}
		resp.Error = "only " + c.b.Team().Background.Owner + " or the operator may control background slots"
	case c.b.deps.Background == nil:
		resp.Result = proto.BgRefusal{Status: status.CodeSlotUnavailable}
		resp.Error = "background slots are not available in this hub"
	default:
		result, ok := c.b.deps.Background.Handle(c.ctx, f.Action, f.Payload)
		resp.OK = ok
		resp.Result = result
		if !ok {
			if r, _ := result.(proto.BgRefusal); r.Status != "" {
				resp.Error = string(r.Status)
			}
		}
	}
	c.sendJSON(resp)
}

// health answers a health-check: a hosted pane's own state when it has one,
// otherwise how long ago the role was last heard from.
func (b *Broker) health(f proto.Frame) proto.HealthResult {
	stale := time.Duration(f.StaleAfterMs) * time.Millisecond
	if stale <= 0 {
		stale = 60 * time.Second
	}
	res := proto.HealthResult{Type: proto.TypeHealthCheckResult, RequestID: f.RequestID, Target: f.Target, StaleThresholdMs: stale.Milliseconds()}
	t, err := b.Team().Resolve(f.Target)
	if err != nil || t.Kind != roles.TargetMember {
		res.Status = string(status.CodeInvalidTarget)
		res.Error = "health-check needs a team member"
		return res
	}
	res.Role, res.PaneID = t.Member.Role, t.Member.PaneID
	if isRemote(t.Member) {
		return b.remoteHealth(res)
	}
	now := b.now()
	b.mu.Lock()
	seen, hasSeen := b.lastSeen[t.Member.Role]
	b.mu.Unlock()
	paneState, hosted := "", false
	if b.deps.Panes != nil {
		var last time.Time
		paneState, last, hosted = b.deps.Panes.Health(t.Member.Role)
		if hosted && last.After(seen) {
			seen, hasSeen = last, true
		}
	}
	if hasSeen {
		res.LastSeen, res.AgeMs = seen.UnixMilli(), now.Sub(seen).Milliseconds()
	}
	switch {
	case hosted && (paneState == "exited" || paneState == "starting"):
		res.Status = paneState
	case hosted:
		res.Healthy, res.Status = true, "healthy"
	case !hasSeen:
		res.Status = "offline"
	case now.Sub(seen) > stale:
		res.Status = "stale"
	default:
		res.Healthy, res.Status = true, "healthy"
	}
	return res
}

// deliveryCheck answers from the ledger for a message id may read (it sent
// or received it; the operator any): any other is known:false, as an id
// the ledger never had.
func (b *Broker) deliveryCheck(ctx context.Context, id Identity, f proto.Frame) proto.DeliveryResult {
	res := proto.DeliveryResult{Type: proto.TypeDeliveryCheckResult, RequestID: f.RequestID, MessageID: f.MessageID}
	if f.MessageID == "" {
		return res
	}
	m, err := b.deps.Ledger.Get(ctx, f.MessageID)
	if err != nil || !b.visibleTo(id).Sees(m) {
		return res
	}
	res.Known = true
	res.Status, res.AckStatus, res.ErrorCode, res.Target, res.Seq = m.Status, m.AckStatus, m.ErrorCode, m.TargetRole, m.Seq
	if res.AckStatus == "" && m.Status != status.Failed {
		// Committed with no stage recorded yet: what its ACK said.
		res.AckStatus = status.AcceptedUnverified
	}
	return res
}

// EventRow renders a ledger event for journal-event frames and `hm comms tail`.
func EventRow(ev journal.Event) proto.EventRow {
	m := ev.Row
	return proto.EventRow{
		EventID: ev.EventID, Event: ev.Event, AtMs: ev.AtMs, Detail: ev.Detail,
		MessageID: m.MessageID, SessionID: m.SessionID, SenderRole: m.SenderRole,
		TargetRole: m.TargetRole, Channel: m.Channel, Seq: m.Seq, Header: m.Header,
		Priority: m.Priority, RawBody: m.RawBody, Status: m.Status, AckStatus: m.AckStatus,
		ErrorCode: m.ErrorCode, BrokeredAtMs: m.BrokeredAtMs, Tags: shownTags(m),
	}
}

// shownTags are the tags a view shows for m (roles.ShownTags of its text
// after the header).
func shownTags(m journal.Message) []string {
	_, body, _ := roles.ParseHeader(m.RawBody)
	return roles.ShownTags(body, m.Priority)
}
