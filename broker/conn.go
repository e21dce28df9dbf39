package broker

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"hm/broker/proto"
	"hm/journal"
	"hm/roles"
)

// conn is one WebSocket client. Its read loop runs in the HTTP handler
// goroutine; a writer goroutine owns all writes.
type conn struct {
	b      *Broker
	id     int64
	ws     *websocket.Conn
	out    chan outFrame
	ctx    context.Context
	cancel context.CancelFunc
	limit  *bucket
	wg     sync.WaitGroup
	// inflight carries sends whose commits are queued, in order, to the
	// acker goroutine, which waits for each and writes its ACK.
	inflight chan inflightSend
	// queued counts the bytes waiting in out; drained is signalled after
	// each write so a replay waiting for room can go on.
	queued  atomic.Int64
	drained chan struct{}

	mu         sync.Mutex
	registered bool
	identity   Identity
	role       string
	listen     bool
	delivered  map[string]struct{}
	subscribed bool
	// replaying is set while the ledger backlog is being replayed: a live
	// delivery that finds the queue full then leaves its message pending
	// for the replay loop instead of dropping the client.
	replaying bool

	closeOnce sync.Once
}

type inflightSend struct {
	p         *Pending
	requestID string
	target    string
	isSend    bool
}

// maxInflight bounds the sends one connection may have queued for commit;
// the read loop stops reading while it is full.
const maxInflight = 256

// maxQueuedBytes bounds the bytes waiting to be written to one client. A
// client that lets more pile up is not reading: it is dropped, and what it
// was owed stays pending in the ledger.
const maxQueuedBytes = 8 << 20

type outFrame struct {
	data      []byte
	onWritten func()
	closeWith *websocket.StatusCode
}

// LoopbackHost reports whether an HTTP Host header names a loopback address.
func LoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (b *Broker) serveWS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.Error(w, "hm: no such endpoint "+clip(r.URL.Path, 80)+" (the WebSocket endpoint is /)", http.StatusNotFound)
		return
	}
	if !LoopbackHost(r.Host) {
		http.Error(w, "hm: only loopback hosts are served", http.StatusForbidden)
		return
	}
	// The default origin check refuses browser cross-origin requests.
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		b.log.Info("websocket handshake refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	ws.SetReadLimit(proto.MaxSocketFrame)
	ctx, cancel := context.WithCancel(b.ctx)
	c := &conn{
		b: b, id: b.nextID.Add(1), ws: ws, ctx: ctx, cancel: cancel,
		out:       make(chan outFrame, b.cfg.SendQueue),
		limit:     newBucket(b.cfg.RateLimit, b.cfg.RateBurst),
		delivered: map[string]struct{}{},
		inflight:  make(chan inflightSend, maxInflight),
		drained:   make(chan struct{}, 1),
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		cancel()
		ws.Close(websocket.StatusGoingAway, "hub shutting down")
		return
	}
	b.conns[c.id] = c
	b.mu.Unlock()

	c.wg.Add(2)
	go c.writeLoop()
	go c.ackLoop()
	c.sendJSON(proto.Welcome{Type: proto.TypeWelcome, ClientID: c.id, Protocol: proto.Protocol})
	c.readLoop()
	c.close()
	c.wg.Wait()
	b.forget(c)
}

func (b *Broker) forget(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c.id)
	for role, m := range b.listeners {
		delete(m, c.id)
		if len(m) == 0 {
			delete(b.listeners, role)
		}
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.ws.CloseNow()
	})
}

func (c *conn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.out:
			if f.closeWith != nil {
				_ = c.ws.Close(*f.closeWith, string(f.data))
				c.close()
				return
			}
			wctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			err := c.ws.Write(wctx, websocket.MessageText, f.data)
			cancel()
			c.queued.Add(-int64(len(f.data)))
			select {
			case c.drained <- struct{}{}:
			default:
			}
			if err != nil {
				c.close()
				return
			}
			if f.onWritten != nil {
				f.onWritten()
			}
		}
	}
}

// enqueue queues a frame. A client whose queue is full is not reading: it is
// dropped, and what it was owed stays pending in the ledger.
func (c *conn) enqueue(f outFrame) bool {
	select {
	case <-c.ctx.Done():
		return false
	default:
	}
	if c.queued.Add(int64(len(f.data))) > maxQueuedBytes {
		c.queued.Add(-int64(len(f.data)))
		c.b.log.Warn("slow consumer dropped", "client", c.id, "role", c.role, "queuedBytes", c.queued.Load())
		c.close()
		return false
	}
	select {
	case c.out <- f:
		return true
	default:
		c.queued.Add(-int64(len(f.data)))
		c.b.log.Warn("slow consumer dropped", "client", c.id, "role", c.role, "queuedFrames", len(c.out))
		c.close()
		return false
	}
}

// hasRoom reports whether n more bytes fit the queue now.
func (c *conn) hasRoom(n int) bool { return c.queued.Load()+int64(n) <= maxQueuedBytes }

// enqueueWait queues a frame, waiting for room: used for backlog replay,
// where a full queue means "not yet", not "not reading".
func (c *conn) enqueueWait(f outFrame) bool {
	for !c.hasRoom(len(f.data)) {
		select {
		case <-c.drained:
		case <-c.ctx.Done():
			return false
		}
	}
	c.queued.Add(int64(len(f.data)))
	select {
	case c.out <- f:
		return true
	case <-c.ctx.Done():
		c.queued.Add(-int64(len(f.data)))
		return false
	}
}

func (c *conn) sendJSON(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		c.b.log.Error("marshal frame", "err", err)
		return
	}
	c.enqueue(outFrame{data: data})
}

func (c *conn) sendError(code proto.Code, msg, requestID, messageID string) {
	c.sendJSON(proto.ErrorFrame{Type: proto.TypeError, Code: code, Message: msg, RequestID: requestID, MessageID: messageID})
}

func (c *conn) readLoop() {
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return
		}
		if !c.limit.allow(time.Now()) {
			c.sendError(proto.CodeRateLimited, "more than the allowed frames per second", "", "")
			continue
		}
		if len(data) > proto.MaxMessageFrame {
			c.sendError(proto.CodeTooLarge, "frame over 256 KiB dropped", "", "")
			continue
		}
		if typ != websocket.MessageText {
			c.sendError(proto.CodeBadJSON, "binary frames are not JSON", "", "")
			continue
		}
		var f proto.Frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.sendError(proto.CodeBadJSON, "frame is not a JSON object: "+clip(err.Error(), 120), "", "")
			continue
		}
		if !c.handle(f, time.Now()) {
			return
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// handle processes one frame; false ends the connection.
func (c *conn) handle(f proto.Frame, received time.Time) bool {
	c.mu.Lock()
	registered, role := c.registered, c.role
	c.mu.Unlock()
	if registered {
		c.b.touch(role)
	}
	switch f.Type {
	case proto.TypeRegister:
		return c.register(f)
	case proto.TypeSend, proto.TypeBroadcast:
		if !registered {
			c.sendError(proto.CodeNotRegistered, "register before sending", f.RequestID, f.MessageID)
			return true
		}
		c.send(f, received)
	case proto.TypeHealthCheck:
		c.sendJSON(c.b.health(f))
	case proto.TypeDeliveryCheck:
		c.sendJSON(c.b.deliveryCheck(c.ctx, f))
	case proto.TypeHeartbeat:
		c.sendJSON(proto.HeartbeatAck{Type: proto.TypeHeartbeatAck, RequestID: f.RequestID, Timestamp: time.Now().UnixMilli()})
	case proto.TypeMessageAck:
		if !registered {
			c.sendError(proto.CodeNotRegistered, "register before acknowledging", f.RequestID, f.MessageID)
			return true
		}
		if f.MessageID == "" {
			c.sendError(proto.CodeBadRequest, "message-ack needs messageId", f.RequestID, "")
			return true
		}
		if err := c.b.Acknowledge(c.ctx, f.MessageID, role); err != nil && !errors.Is(err, journal.ErrNotFound) {
			c.sendError(proto.CodeJournalUnavailable, err.Error(), f.RequestID, f.MessageID)
		}
	case proto.TypeSubscribe:
		c.subscribe(f)
	case proto.TypeBackgroundAgent:
		c.background(f, registered)
	default:
		c.sendError(proto.CodeUnknownType, "unknown frame type "+clip(f.Type, 40), f.RequestID, "")
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
		m, ok := b.team.Lookup(role)
		if !ok || m.Role != role {
			if !id.Operator && f.Token != "" {
				return c.unauthorized("unknown role")
			}
			c.sendError(proto.CodeInvalidTarget, "no role "+clip(role, 40)+" in this team", f.RequestID, "")
			return true
		}
		paneID = m.PaneID
	}
	if role == roles.RoleUser && !id.Operator && !b.cfg.AllowAnonymous {
		return c.unauthorized("only the operator may act as user")
	}
	id.Role = role
	c.mu.Lock()
	c.registered, c.identity, c.role, c.listen = true, id, role, f.Listen
	c.mu.Unlock()
	b.touch(role)
	c.sendJSON(proto.Registered{Type: proto.TypeRegistered, Role: role, PaneID: paneID, ClientID: c.id})
	if f.Listen {
		b.mu.Lock()
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

func (c *conn) unauthorized(why string) bool {
	c.b.log.Warn("unauthorized register", "client", c.id, "why", why)
	data, _ := json.Marshal(proto.ErrorFrame{Type: proto.TypeError, Code: proto.CodeUnauthorized, Message: why})
	c.enqueue(outFrame{data: data})
	code := websocket.StatusPolicyViolation
	c.enqueue(outFrame{data: []byte("unauthorized"), closeWith: &code})
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
	p := c.b.Begin(c.ctx, Submission{
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
	select {
	case c.inflight <- inflightSend{p: p, requestID: f.RequestID, target: f.Target, isSend: f.Type == proto.TypeSend}:
	case <-c.ctx.Done():
	}
}

// ackLoop finishes queued sends in order and writes their ACKs.
func (c *conn) ackLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			// Queued commits still complete in the ledger; their messages
			// are routed from there (pending replay) even though this
			// client will not see the ACK.
			for {
				select {
				case in := <-c.inflight:
					in.p.s.Wait = 0 // nobody is waiting for this ACK any more
					c.b.End(context.Background(), in.p)
				default:
					return
				}
			}
		case in := <-c.inflight:
			ack, _ := c.b.End(c.ctx, in.p)
			ack.RequestID = in.requestID
			if in.isSend {
				ack.Target = in.target
			}
			c.sendJSON(ack)
		}
	}
}

// toListeners hands m to every listener of role. It reports whether any
// listener took it.
func (b *Broker) toListeners(role string, m journal.Message, content string) bool {
	b.mu.Lock()
	ls := make([]*conn, 0, len(b.listeners[role]))
	for _, c := range b.listeners[role] {
		ls = append(ls, c)
	}
	b.mu.Unlock()
	took := false
	for _, c := range ls {
		if c.deliver(m, content) {
			took = true
		}
	}
	return took
}

func (c *conn) deliver(m journal.Message, content string) bool {
	return c.deliverWith(m, content, c.enqueueLive)
}

// enqueueLive queues a live delivery. While the backlog is replaying, a
// full queue leaves the message pending for the replay loop; otherwise a
// full queue is a slow consumer and the client is dropped.
func (c *conn) enqueueLive(f outFrame) bool {
	c.mu.Lock()
	replaying := c.replaying
	c.mu.Unlock()
	if !replaying {
		return c.enqueue(f)
	}
	if !c.hasRoom(len(f.data)) {
		return false
	}
	c.queued.Add(int64(len(f.data)))
	select {
	case c.out <- f:
		return true
	default:
		c.queued.Add(-int64(len(f.data)))
		return false
	}
}

func (c *conn) deliverWith(m journal.Message, content string, enqueue func(outFrame) bool) bool {
	c.mu.Lock()
	if _, dup := c.delivered[m.MessageID]; dup {
		c.mu.Unlock()
		return true
	}
	c.delivered[m.MessageID] = struct{}{}
	c.mu.Unlock()
	meta := json.RawMessage(m.MetadataJSON)
	if !json.Valid(meta) {
		meta = json.RawMessage("{}")
	}
	data, err := json.Marshal(proto.Message{
		Type: proto.TypeMessage, From: m.SenderRole, MessageID: m.MessageID, Seq: m.Seq,
		Content: content, Priority: m.Priority, Metadata: meta, Timestamp: m.BrokeredAtMs,
	})
	if err != nil {
		return false
	}
	id, b := m.MessageID, c.b
	ok := enqueue(outFrame{data: data, onWritten: func() {
		b.deps.Ledger.AdvanceAsync(journal.Change{MessageID: id, Status: "routed", AckStatus: proto.StatusDeliveredWebsocket, Event: "delivered", Detail: map[string]any{"client": c.id}})
		b.wake(id)
	}})
	if !ok {
		c.mu.Lock()
		delete(c.delivered, m.MessageID)
		c.mu.Unlock()
	}
	return ok
}

// replayPending delivers messages that waited in the ledger for role, with
// backpressure, until none are left (live messages arriving meanwhile stay
// pending and are picked up by the next pass).
func (b *Broker) replayPending(c *conn, role string) {
	c.mu.Lock()
	c.replaying = true
	c.mu.Unlock()
	for b.replayPass(c, role) > 0 {
	}
	c.mu.Lock()
	c.replaying = false
	c.mu.Unlock()
	b.replayPass(c, role) // anything skipped while the flag was being cleared
}

// replayPass delivers the pending rows not yet delivered on c; it returns
// how many it delivered.
func (b *Broker) replayPass(c *conn, role string) int {
	pending, err := b.deps.Ledger.Pending(c.ctx, role)
	if err != nil {
		if c.ctx.Err() == nil {
			b.log.Warn("load pending for listener", "role", role, "err", err)
		}
		return 0
	}
	now := b.now()
	n := 0
	for _, m := range pending {
		c.mu.Lock()
		_, done := c.delivered[m.MessageID]
		c.mu.Unlock()
		if done {
			continue
		}
		prefix := ""
		if m.SessionID != b.cfg.SessionID {
			if now.Sub(time.UnixMilli(m.BrokeredAtMs)) > b.cfg.DelayedMaxAge {
				continue // Recover expires it
			}
			prefix = delayedPrefix(m)
		}
		if !c.deliverWith(m, prefix+m.RawBody, c.enqueueWait) {
			return 0
		}
		n++
	}
	return n
}

func (c *conn) subscribe(f proto.Frame) {
	want := false
	for _, t := range f.Topics {
		if t == "journal" {
			want = true
		}
	}
	if !want {
		c.sendError(proto.CodeBadRequest, `subscribe supports the topic "journal"`, f.RequestID, "")
		return
	}
	c.mu.Lock()
	if c.subscribed {
		c.mu.Unlock()
		return
	}
	c.subscribed = true
	c.mu.Unlock()
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
				c.sendJSON(proto.JournalEvent{Type: proto.TypeJournalEvent, Row: EventRow(ev)})
			}
		}
	}()
}

func (c *conn) background(f proto.Frame, registered bool) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	resp := proto.Response{Type: proto.TypeResponse, RequestID: f.RequestID}
	switch {
	case !registered:
		resp.Result = proto.BgRefusal{Status: string(proto.CodeNotRegistered)}
		resp.Error = string(proto.CodeNotRegistered)
	case !id.Operator && id.Role != c.b.team.Background.Owner:
		resp.Result = proto.BgRefusal{Status: string(proto.CodeOwnerBindingViolation)}
		resp.Error = "only " + c.b.team.Background.Owner + " or the operator may control background slots"
	case c.b.deps.Background == nil:
		resp.Result = proto.BgRefusal{Status: string(proto.CodeSlotUnavailable)}
		resp.Error = "background slots are not available in this hub"
	default:
		result, ok := c.b.deps.Background.Handle(c.ctx, f.Action, f.Payload)
		resp.OK = ok
		resp.Result = result
		if !ok {
			if r, _ := result.(proto.BgRefusal); r.Status != "" {
				resp.Error = r.Status
			}
		}
	}
	c.sendJSON(resp)
}

func (b *Broker) health(f proto.Frame) proto.HealthResult {
	stale := time.Duration(f.StaleAfterMs) * time.Millisecond
	if stale <= 0 {
		stale = 60 * time.Second
	}
	res := proto.HealthResult{Type: proto.TypeHealthCheckResult, RequestID: f.RequestID, Target: f.Target, StaleThresholdMs: stale.Milliseconds()}
	t, err := b.team.Resolve(f.Target)
	if err != nil || t.Kind != roles.TargetMember {
		res.Status = string(proto.CodeInvalidTarget)
		res.Error = "health-check needs a team member"
		return res
	}
	res.Role, res.PaneID = t.Member.Role, t.Member.PaneID
	now := b.now()
	b.mu.Lock()
	seen, hasSeen := b.lastSeen[t.Member.Role]
	listening := len(b.listeners[t.Member.Role]) > 0
	b.mu.Unlock()
	if b.deps.Panes != nil {
		if state, last, ok := b.deps.Panes.Health(t.Member.Role); ok {
			if last.After(seen) {
				seen, hasSeen = last, true
			}
			if state == "exited" || state == "starting" {
				res.Status = state
				if hasSeen {
					res.LastSeen, res.AgeMs = seen.UnixMilli(), now.Sub(seen).Milliseconds()
				}
				return res
			}
			res.Healthy, res.Status = true, "healthy"
			if hasSeen {
				res.LastSeen, res.AgeMs = seen.UnixMilli(), now.Sub(seen).Milliseconds()
			}
			return res
		}
	}
	if !hasSeen {
		res.Status = "offline"
		return res
	}
	res.LastSeen, res.AgeMs = seen.UnixMilli(), now.Sub(seen).Milliseconds()
	switch {
	case now.Sub(seen) > stale:
		res.Status = "stale"
	case listening:
		res.Healthy, res.Status = true, "healthy"
	default:
		res.Healthy, res.Status = true, "healthy"
	}
	return res
}

func (b *Broker) deliveryCheck(ctx context.Context, f proto.Frame) proto.DeliveryResult {
	res := proto.DeliveryResult{Type: proto.TypeDeliveryCheckResult, RequestID: f.RequestID, MessageID: f.MessageID}
	if f.MessageID == "" {
		return res
	}
	m, err := b.deps.Ledger.Get(ctx, f.MessageID)
	if err != nil {
		return res
	}
	res.Known = true
	res.Status, res.AckStatus, res.ErrorCode, res.Target, res.Seq = m.Status, m.AckStatus, m.ErrorCode, m.TargetRole, m.Seq
	return res
}

// EventRow renders a ledger event for journal-event frames and `hm comms tail`.
func EventRow(ev journal.Event) map[string]any {
	m := ev.Row
	return map[string]any{
		"event_id": ev.EventID, "event": ev.Event, "at_ms": ev.AtMs, "detail": ev.Detail,
		"message_id": m.MessageID, "session_id": m.SessionID, "sender_role": m.SenderRole,
		"target_role": m.TargetRole, "channel": m.Channel, "seq": m.Seq, "header": m.Header,
		"priority": m.Priority, "raw_body": m.RawBody, "status": m.Status, "ack_status": m.AckStatus,
		"error_code": m.ErrorCode, "brokered_at_ms": m.BrokeredAtMs,
	}
}
