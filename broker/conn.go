// This file is the WebSocket transport: accepting a connection, its read,
// write and ACK loops, the rate and size limits, and the bounded outbound queue.

package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hm/internal/ground/status"

	"github.com/coder/websocket"

	"hm/broker/proto"
)

// conn is one WebSocket client. Its read loop runs in the HTTP handler
// goroutine; a writer goroutine owns all writes.
type conn struct {
	b      *Broker
	id     int64
	ws     socket
	cork   *corkConn // under ws when the hub accepted it (cork.go); nil for tests' fake sockets
	out    chan outFrame
	ctx    context.Context
	cancel context.CancelFunc
	limit  *bucket
	wg     sync.WaitGroup // the writer and the acker (serve), the replays register starts

	// Lock order: a goroutine that holds one of these locks takes only
	// locks listed after it, never one listed before:
	//
	//	replayMu    one replay of the backlog at a time (replayPending, pruneDelivered)
	//	Broker.mu   the broker's sets of connections and listeners
	//	mu          the fields listed under it
	//	inflightMu  inflight and inflightClosed
	//	claimMu     claims
	//	cork.mu     the socket's kept writes (corkConn)
	//
	// In practice replayMu is the only lock held while another is taken:
	// under it a replay takes Broker.mu (goBackground) and mu, reads the
	// ledger and waits for room in out. Broker.mu and mu are never held
	// together: who needs both copies what it needs under one, then takes
	// the other. inflightMu is held while a send waits for room in inflight,
	// which the acker always drains; claimMu and cork.mu are held alone.
	// acksPending and wg are WaitGroups, closeOnce runs close once.
	//
	// inflight carries sends whose commits are queued, in order, to the
	// acker goroutine, which waits for each, routes it and writes its ACK.
	// It is closed (under inflightMu, with inflightClosed set) only when the
	// read side is done, so the acker settles every queued commit even
	// after the client has gone.
	inflight       chan inflightSend
	inflightMu     sync.Mutex
	inflightClosed bool
	// queued counts the bytes waiting in out; drained is signalled after
	// each write so a replay waiting for room can go on.
	queued  atomic.Int64
	drained chan struct{}

	// mu guards the fields below, down to replaying.
	mu         sync.Mutex
	registered bool
	identity   Identity
	role       string
	// delivered holds the ids handed to this connection that it could
	// still be offered again (pending or not yet acknowledged in the
	// ledger), each with the generation of its delivery; pruneDelivered
	// drops the rest, so the set stays about as large as what the listener
	// has not acknowledged, not as large as the session (replay.go).
	delivered  map[string]uint64
	deliverGen uint64
	pruneAt    int
	pruning    bool
	subscribed bool
	// replaying is set from the register that makes c a listener, and
	// while any replay of its backlog runs: a live delivery meanwhile is
	// held (in delivery order) and queued after the replay, so it never
	// overtakes an older row the replay has not handed over yet (replay.go).
	// A held message past maxQueuedBytes stays pending in the ledger for
	// the replay instead.
	replaying bool
	held      []outFrame
	heldBytes int64
	// handover is the listener's ack policy "handover": what it was handed
	// counts as done. Otherwise (the default, "message-ack") delivery is
	// at-least-once until its message-ack. Unlike the fields around it, it
	// is written under Broker.mu, once, at the register that makes c a
	// listener and before the replay that reads it starts; a later register
	// may not change it (reregister).
	handover bool
	// replayMu serializes replays of the backlog to this listener (at
	// register, and when another listener of the role dies).
	replayMu sync.Mutex

	// claims holds the messages this connection claimed from its role's
	// pane and has not settled with a claim-ack (claim.go), by id; what is
	// left when the connection ends or the lease runs out goes back to the
	// pane.
	claimMu sync.Mutex
	claims  claimLeases
	// acksPending counts this connection's message-acks queued for the
	// ledger and not yet committed (frames.go).
	acksPending sync.WaitGroup

	closeOnce sync.Once

	// budget is the connection budget c counts against (admit, promote);
	// nil for connections the hub did not accept (tests' fake sockets).
	budget *Budget

	// preauthOperator is set, before serve, on a connection whose HTTP
	// request the caller authenticated as the operator
	// (Broker.ServeOperatorWS): its register needs no token.
	preauthOperator bool
}

// socket is what a conn needs of its WebSocket (*websocket.Conn); the
// in-process frame fuzzer supplies its own.
type socket interface {
	Reader(ctx context.Context) (websocket.MessageType, io.Reader, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
}

type inflightSend struct {
	p         *queuedSubmit
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
	b.accept(w, r, false)
}

// ServeOperatorWS serves the broker's protocol on a connection the caller
// has already authenticated as the operator (the cockpit's session cookie,
// /ui/ws): its register needs no token and makes it the operator, who may
// act as any role (role "user" by default). The caller must have checked
// the request; the loopback and origin checks of "/" still apply.
func (b *Broker) ServeOperatorWS(w http.ResponseWriter, r *http.Request) {
	b.accept(w, r, true)
}

// accept upgrades r to a WebSocket and serves the broker's protocol on it
// until it ends. operator marks a connection authenticated by the caller.
func (b *Broker) accept(w http.ResponseWriter, r *http.Request, operator bool) {
	if !LoopbackHost(r.Host) {
		http.Error(w, "hm: only loopback hosts are served", http.StatusForbidden)
		return
	}
	budget, ok := b.admit(w, r, operator)
	if !ok {
		return
	}
	// The default origin check refuses browser cross-origin requests.
	cw := &corkWriter{ResponseWriter: w}
	ws, err := websocket.Accept(cw, r, nil)
	if err != nil {
		budget.Release()
		b.log.Info("websocket handshake refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	ws.SetReadLimit(proto.MaxSocketFrame)
	c := b.newConn(ws)
	c.budget = budget
	defer func() { c.budget.Release() }() // the budget it holds at the end (promote)
	c.cork = cw.conn
	c.preauthOperator = operator
	if !b.add(c) {
		ws.Close(websocket.StatusGoingAway, "hub shutting down")
		return
	}
	c.serve(c.readLoop)
}

// admit picks the budget a new connection counts against and takes a place
// in it: the cockpit's for a connection the caller authenticated, the
// agents' for one whose upgrade request carries a valid token, and the
// budget of connections without a token for the rest, until they register
// (promote). A token that is not valid counts for nothing: such a
// connection is one without a token, and its register is refused as
// unauthorized as before.
func (b *Broker) admit(w http.ResponseWriter, r *http.Request, operator bool) (*Budget, bool) {
	budget := b.unregistered
	if operator {
		budget = b.operatorConns
	} else if _, ok := b.cfg.Tokens.Check(RequestToken(r)); ok {
		budget = b.agents
	}
	if !budget.Acquire() {
		budget.Refuse(w, r, b.log)
		return nil, false
	}
	return budget, true
}

// promote moves a connection that registered out of the budget of
// connections without a token into the agents'; false when that is full.
// It runs on the connection's read loop, as does the release at its end.
func (c *conn) promote() bool {
	if c.budget != c.b.unregistered {
		return true
	}
	if !c.b.agents.Acquire() {
		return false
	}
	c.b.unregistered.Release()
	c.budget = c.b.agents
	return true
}

// newConn returns a connection over ws, not yet added to the broker.
func (b *Broker) newConn(ws socket) *conn {
	ctx, cancel := context.WithCancel(b.ctx)
	return &conn{
		b: b, id: b.nextID.Add(1), ws: ws, ctx: ctx, cancel: cancel,
		out:       make(chan outFrame, b.cfg.SendQueue),
		limit:     newBucket(b.cfg.RateLimit, b.cfg.RateBurst),
		delivered: map[string]uint64{},
		pruneAt:   minPruneAt,
		inflight:  make(chan inflightSend, maxInflight),
		drained:   make(chan struct{}, 1),
	}
}

// add records c as open; it reports false (and cancels c) once the broker
// is closing.
func (b *Broker) add(c *conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		c.cancel()
		return false
	}
	b.conns[c.id] = c
	return true
}

// serve runs c: it starts the writer and the acker, sends the welcome and
// calls read in the caller's goroutine; when read returns, c is closed,
// its goroutines are waited for and it is forgotten.
func (c *conn) serve(read func()) {
	c.wg.Add(2)
	go c.writeLoop()
	go c.ackLoop()
	c.sendJSON(proto.Welcome{Type: proto.TypeWelcome, ClientID: c.id, Protocol: proto.Protocol})
	idle := time.AfterFunc(c.b.cfg.RegisterTimeout, c.closeIfUnregistered)
	read()
	idle.Stop()
	c.returnClaims(0) // a hook that went away without its claim-ack
	c.inflightMu.Lock()
	c.inflightClosed = true
	close(c.inflight)
	c.inflightMu.Unlock()
	c.close()
	c.wg.Wait()
	c.returnClaims(0) // what a waiting claim took as the connection ended
	c.b.forget(c)
}

func (b *Broker) forget(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c.id)
	for role, m := range b.listeners {
		if _, was := m[c.id]; !was {
			continue
		}
		delete(m, c.id)
		if len(m) == 0 {
			delete(b.listeners, role)
			continue
		}
		// What the dead listener was handed and did not acknowledge is
		// offered again to the role's other listeners (those that already
		// have a message skip it); a listener that registers later gets it
		// from its own replay.
		if c.handover || b.closed {
			continue
		}
		for _, o := range m {
			if o.handover {
				continue
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.replayPending(o, role)
			}()
		}
	}
}

// closeIfUnregistered ends a connection that has not registered within
// the register timeout: idle unregistered clients are not kept.
func (c *conn) closeIfUnregistered() {
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	if registered {
		return
	}
	c.b.log.Info("closing unregistered connection", "client", c.id, "after", c.b.cfg.RegisterTimeout)
	code := websocket.StatusPolicyViolation
	if !c.enqueue(outFrame{data: []byte("register within " + c.b.cfg.RegisterTimeout.String()), closeWith: &code}) {
		c.close()
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.ws.CloseNow()
	})
}

// writeTimeout bounds how long a client may take to read what it is sent.
const writeTimeout = 10 * time.Second

func (c *conn) writeLoop() {
	defer c.wg.Done()
	var batch []outFrame
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.out:
			batch = append(batch[:0], f)
		}
		// Every frame already queued goes out with the first, corked
		// (cork.go), up to maxCork bytes or a close.
		size := len(batch[0].data)
	more:
		for size < maxCork && batch[len(batch)-1].closeWith == nil {
			select {
			case f := <-c.out:
				batch = append(batch, f)
				size += len(f.data)
			default:
				break more
			}
		}
		if !c.writeBatch(batch) {
			return
		}
		clear(batch) // drop the callbacks and bytes until the next burst
	}
}

// writeBatch writes frames in order, the last possibly a close; it reports
// false once the connection is done.
func (c *conn) writeBatch(batch []outFrame) bool {
	c.cork.cork()
	var err error
	n := 0
	for _, f := range batch {
		if f.closeWith != nil {
			break
		}
		// Kept by the cork: the write cannot block; uncork's write has
		// the deadline.
		if err = c.ws.Write(c.ctx, websocket.MessageText, f.data); err != nil {
			break
		}
		n++
	}
	if uerr := c.cork.uncork(writeTimeout); err == nil {
		err = uerr
	}
	for _, f := range batch {
		c.queued.Add(-int64(len(f.data)))
	}
	select {
	case c.drained <- struct{}{}:
	default:
	}
	if err != nil {
		c.close()
		return false
	}
	for _, f := range batch[:n] {
		if f.onWritten != nil {
			f.onWritten()
		}
	}
	if last := batch[len(batch)-1]; last.closeWith != nil {
		_ = c.ws.Close(*last.closeWith, string(last.data))
		c.close()
		return false
	}
	return true
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

func (c *conn) sendError(code status.Code, msg, requestID, messageID string) {
	c.sendJSON(proto.ErrorFrame{Type: proto.TypeError, Code: code, Message: msg, RequestID: requestID, MessageID: messageID})
}

func (c *conn) readLoop() {
	// Frames are read into one buffer: readFrame keeps nothing of the
	// bytes it is given (json.Unmarshal copies what it stores).
	var buf bytes.Buffer
	for {
		// A read ends when the connection closes (c.close closes the
		// socket); a context that can be cancelled would cost every
		// read a registration with it (coder/websocket's read timeout).
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return // over the read limit, or the connection broke
		}
		if !c.readFrame(typ, buf.Bytes()) {
			return
		}
		if buf.Cap() > maxKeptReadBuf {
			buf = bytes.Buffer{} // one large frame does not pin its buffer
		}
	}
}

// maxKeptReadBuf bounds the read buffer a connection keeps between frames.
const maxKeptReadBuf = 64 << 10

// readFrame applies the rate and size limits to one frame read from the
// client, decodes it and hands it to its handler. Every frame refused here
// gets an error frame. It returns false when the connection must end.
func (c *conn) readFrame(typ websocket.MessageType, data []byte) bool {
	if !c.limit.allow(time.Now()) {
		c.sendError(status.CodeRateLimited, "more than the allowed frames per second", "", "")
		return true
	}
	if len(data) > proto.MaxMessageFrame {
		c.sendError(status.CodeTooLarge, "frame over 256 KiB dropped", "", "")
		return true
	}
	if typ != websocket.MessageText {
		c.sendError(status.CodeBadJSON, "binary frames are not JSON", "", "")
		return true
	}
	var f proto.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		c.sendError(status.CodeBadJSON, "frame is not a JSON object: "+clip(err.Error(), 120), "", "")
		return true
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// null decodes into an empty frame without an error.
		c.sendError(status.CodeBadJSON, "frame is not a JSON object", "", "")
		return true
	}
	return c.handle(f, time.Now())
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ackLoop finishes queued sends in order and writes their ACKs. It runs
// until inflight is closed: a send queued to the ledger is always settled
// (its commit awaited and the message routed), whether or not the client
// is still there to read the ACK.
func (c *conn) ackLoop() {
	defer c.wg.Done()
	for in := range c.inflight {
		if c.ctx.Err() != nil {
			in.p.s.Wait = 0 // nobody is waiting for this ACK any more
		}
		ack, err := c.b.route(c.ctx, in.p)
		if in.p.wake != nil {
			// The sender asked to wait (waitMs): its ACK is written when
			// the wait ends, and the sends after it go on meanwhile.
			c.wg.Add(1) // this loop holds the group open: never from zero
			go func() {
				defer c.wg.Done()
				ack := c.b.awaitDefinitive(c.ctx, in.p, ack)
				c.writeAck(in, ack, err)
			}()
			continue
		}
		c.writeAck(in, ack, err)
	}
}

// writeAck seals a send's ACK and writes it (a no-op once the client is
// gone).
func (c *conn) writeAck(in inflightSend, ack proto.Ack, err error) {
	ack, _ = c.b.sealAck(in.p, ack, err)
	ack.RequestID = in.requestID
	if in.isSend {
		ack.Target = in.target
	}
	c.sendJSON(ack)
}

// queueInflight hands a begun send to the acker. Once the acker has
// stopped taking sends, the send is settled here instead: its commit is
// still awaited and the message routed.
func (c *conn) queueInflight(in inflightSend) {
	c.inflightMu.Lock()
	if !c.inflightClosed {
		c.inflight <- in // the acker always drains: this waits only for room
		c.inflightMu.Unlock()
		return
	}
	c.inflightMu.Unlock()
	in.p.s.Wait = 0
	c.b.end(c.ctx, in.p)
}
