package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/status"
	"hm/journal"
)

// DialFunc connects to the hub and registers (not as a listener). It is
// called for the first tool call and again after the connection fails, so
// it should discover the hub's port, token and role each time (a hub that
// restarted has a new port and new pane tokens).
type DialFunc func(ctx context.Context) (*client.Client, proto.Registered, error)

// hubConn is the server's one connection to the hub, shared by every tool
// call. Calls are serialised (client.Client serves one request at a time);
// a round trip takes well under a millisecond.
type hubConn struct {
	dial    DialFunc
	timeout time.Duration
	log     *slog.Logger

	mu  sync.Mutex
	cl  *client.Client
	reg proto.Registered
	me  *self // the registered role, fetched once per connection
	n   int64
}

// self is what the server acts as, from the hub's status answer.
type self struct {
	role, header string
	operator     bool           // registered with the operator token
	reader       journal.Reader // what reaches role (readerOf)
}

// session is what a tool call holds while it talks to the hub.
type session struct {
	h   *hubConn
	cl  *client.Client
	reg proto.Registered
}

// do runs fn with a registered connection, dialing when there is none. When
// the connection fails (the hub restarted or went away) it is dropped and
// fn runs once more on a new one; a refusal (*proto.Error) is returned as
// it is. fn must be safe to repeat: sends carry their messageId, so a
// repeated send is deduplicated by the hub.
func (h *hubConn) do(ctx context.Context, fn func(ctx context.Context, s session) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		fresh := false
		if h.cl == nil {
			cl, reg, err := h.dial(ctx)
			if err != nil {
				h.log.Warn("hm mcp: cannot reach the hub", "err", err)
				return err
			}
			h.cl, h.reg, h.me, fresh = cl, reg, nil, true
		}
		err := fn(ctx, session{h: h, cl: h.cl, reg: h.reg})
		var pe *proto.Error
		if err == nil || errors.As(err, &pe) {
			return err
		}
		h.cl.CloseNow()
		h.cl = nil
		h.log.Info("hm mcp: hub connection lost", "err", err)
		if fresh || attempt > 0 || ctx.Err() != nil {
			return fmt.Errorf("hub connection failed: %w", err)
		}
	}
}

// close ends the connection.
func (h *hubConn) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cl != nil {
		h.cl.Close()
		h.cl = nil
	}
}

func (s session) requestID() string {
	s.h.n++
	return "mcp-" + strconv.FormatInt(s.h.n, 10)
}

// fits refuses f before anything is written when the hub would not take
// it: a frame over proto.MaxMessageFrame is too_large (the hub answers so
// and drops it, and over its socket limit, proto.MaxSocketFrame, closes the
// connection instead). Refused here, the connection stays.
func fits(f proto.Frame) error {
	if len(f.Content) > proto.MaxMessageFrame {
		return proto.Errorf(status.CodeTooLarge, fmt.Sprintf("content is %d bytes; the limit is %d", len(f.Content), proto.MaxMessageFrame))
	}
	data, err := json.Marshal(f)
	if err != nil {
		return proto.Errorf(status.CodeInternal, "encode "+f.Type+" frame: "+err.Error())
	}
	if len(data) > proto.MaxMessageFrame {
		return proto.Errorf(status.CodeTooLarge, fmt.Sprintf("the %s frame is %d bytes; the limit is %d", f.Type, len(data), proto.MaxMessageFrame))
	}
	return nil
}

// write sends f if it fits.
func (s session) write(ctx context.Context, f proto.Frame) error {
	if err := fits(f); err != nil {
		return err
	}
	return s.cl.WriteJSON(ctx, f)
}

// send sends a send frame, if it fits, and waits for its send-ack.
func (s session) send(ctx context.Context, f proto.Frame) (proto.Ack, error) {
	if err := fits(f); err != nil {
		return proto.Ack{}, err
	}
	ack, _, err := s.cl.Send(ctx, f)
	return ack, err
}

// query runs a query frame and decodes its result into out.
func (s session) query(ctx context.Context, op string, payload, out any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return proto.Errorf(status.CodeInternal, "encode "+op+" query: "+err.Error())
	}
	f := proto.Frame{Type: proto.TypeQuery, Op: op, Payload: raw, RequestID: s.requestID()}
	if err := fits(f); err != nil {
		return err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	if err := s.cl.Request(ctx, f, proto.TypeResponse, &resp); err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return proto.Errorf(status.CodeInternal, "decode "+op+" result: "+err.Error())
	}
	return nil
}

// whoami is the registered role as the hub describes it (from the status
// query, once per connection).
func (s session) whoami(ctx context.Context) (self, error) {
	if s.h.me != nil {
		return *s.h.me, nil
	}
	var st proto.StatusResult
	if err := s.query(ctx, proto.QueryStatus, proto.StatusQuery{}, &st); err != nil {
		return self{}, err
	}
	me := self{role: st.Role, header: st.Header, operator: st.Operator, reader: readerOf(st)}
	s.h.me = &me
	return me, nil
}

// readerOf is the view of the role a status answer describes, as the hub
// reads for it (journal.RoleReader): a main pane receives broadcasts and
// others-<another main pane>.
func readerOf(st proto.StatusResult) journal.Reader {
	main := false
	var peers []string
	for _, p := range st.Panes {
		if p.Background {
			continue
		}
		peers = append(peers, p.Role)
		main = main || p.Role == st.Role
	}
	if !main {
		peers = nil
	}
	return journal.RoleReader(st.Role, main, peers)
}

// recipient reports whether me received m, by the hub's rule
// (journal.Reader.Received, as for message-ack).
func (me self) recipient(m proto.MessageView) bool {
	return me.reader.Received(journal.Message{SenderRole: m.From, TargetRole: m.To, Status: m.Status})
}
