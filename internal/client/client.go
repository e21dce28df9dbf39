// Package client is a small hm WebSocket client used by the CLI and tests.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"hm/broker/proto"
	"hm/internal/ground/status"
)

// Client is one connection to the hub. It is not safe for concurrent use:
// the CLI issues one request at a time.
type Client struct {
	ws       *wsConn
	ClientID int64
	// welcomed: the hub's welcome frame was read (awaitWelcome).
	welcomed bool
	// sends numbers the requestId Send gives a send frame without one.
	sends int64
	// Unsolicited frames (messages, journal events) read while waiting for
	// an answer are kept here in order.
	backlog [][]byte
}

// Dial connects to url and reads the welcome frame.
func Dial(ctx context.Context, url string) (*Client, error) { return DialToken(ctx, url, "") }

// DialToken is Dial sending token with the upgrade request
// ("Authorization: Bearer"), when set: the hub then counts the connection
// as an agent's from the start, so that connections without a token
// cannot crowd it out (docs/protocol.md, "Connection budgets"). Register
// still names the token.
func DialToken(ctx context.Context, url, token string) (*Client, error) {
	c, err := DialTokenPipelined(ctx, url, token)
	if err != nil {
		return nil, err
	}
	if err := c.awaitWelcome(ctx); err != nil {
		c.ws.CloseNow()
		return nil, err
	}
	return c, nil
}

// DialTokenPipelined is DialToken without the wait for the welcome frame:
// it returns once the connection is upgraded, so that the caller's first
// frames go out at once, not a round trip later (the hub sends its welcome
// before it reads the connection's frames, in order). The first read takes
// the welcome (and sets ClientID), or fails as DialToken would have (#36:
// hm-send's register and send).
func DialTokenPipelined(ctx context.Context, url, token string) (*Client, error) {
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	ws, err := dialWS(ctx, url, h, proto.MaxSocketFrame)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return &Client{ws: ws}, nil
}

// awaitWelcome reads the hub's first frame, its welcome, unless it was
// read already.
func (c *Client) awaitWelcome(ctx context.Context) error {
	if c.welcomed {
		return nil
	}
	raw, err := c.ws.Read(ctx)
	if err != nil {
		return fmt.Errorf("read welcome: %w", err)
	}
	var w proto.Welcome
	if err := json.Unmarshal(raw, &w); err != nil || w.Type != proto.TypeWelcome {
		return fmt.Errorf("unexpected first frame %q", clip(raw))
	}
	c.welcomed, c.ClientID = true, w.ClientID
	return nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.ws.Close() }

// CloseNow closes the connection without a close handshake.
func (c *Client) CloseNow() error { return c.ws.CloseNow() }

func (c *Client) read(ctx context.Context) ([]byte, error) {
	if err := c.awaitWelcome(ctx); err != nil {
		return nil, err
	}
	return c.ws.Read(ctx)
}

// WriteJSON sends one frame.
func (c *Client) WriteJSON(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshal frame: %w", err)
	}
	if err := c.ws.Write(ctx, data); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// WriteText sends data as one text frame, as is.
func (c *Client) WriteText(ctx context.Context, data []byte) error {
	if err := c.ws.Write(ctx, data); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

type header struct {
	Type      string      `json:"type"`
	RequestID string      `json:"requestId"`
	MessageID string      `json:"messageId"`
	Code      status.Code `json:"code"`
	Message   string      `json:"message"`
}

// Next returns the next frame: from the backlog first, then the socket.
func (c *Client) Next(ctx context.Context) (typ string, raw []byte, err error) {
	if len(c.backlog) > 0 {
		raw = c.backlog[0]
		c.backlog = c.backlog[1:]
	} else if raw, err = c.read(ctx); err != nil {
		return "", nil, err
	}
	var h header
	_ = json.Unmarshal(raw, &h)
	return h.Type, raw, nil
}

// Await reads frames until one of type want arrives (optionally matching
// requestID or messageID) and returns it. An error frame answering the same
// request is returned as a *proto.Error. Other frames go to the backlog.
func (c *Client) Await(ctx context.Context, want, requestID, messageID string) ([]byte, error) {
	for {
		raw, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		var h header
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, fmt.Errorf("bad frame from hub: %w", err)
		}
		// A requestId answered is the request's answer, whatever its
		// messageId: the ACK of a duplicate carries the first copy's.
		matches := requestID != "" && h.RequestID == requestID ||
			requestID == "" && (messageID == "" || h.MessageID == messageID || h.MessageID == "")
		if h.Type == want && matches {
			return raw, nil
		}
		if h.Type == proto.TypeError && (h.RequestID == requestID || h.RequestID == "") && (h.MessageID == "" || h.MessageID == messageID) {
			return raw, &proto.Error{Code: h.Code, Message: h.Message}
		}
		c.backlog = append(c.backlog, raw)
	}
}

// Register authenticates as role.
func (c *Client) Register(ctx context.Context, role, token string, listen bool) (proto.Registered, error) {
	if err := c.WriteRegister(ctx, role, token, listen); err != nil {
		return proto.Registered{}, err
	}
	return c.AwaitRegistered(ctx, role)
}

// WriteRegister writes a register frame for role without waiting for the
// answer (AwaitRegistered reads it). The hub takes a connection's frames
// in order, so frames written after it are read once it is registered: a
// client that sends one message can write its send right behind (hm-send
// does) instead of waiting a round trip for registered.
func (c *Client) WriteRegister(ctx context.Context, role, token string, listen bool) error {
	return c.WriteJSON(ctx, proto.Frame{Type: proto.TypeRegister, Role: role, Token: token, Listen: listen})
}

// AwaitRegistered waits for the answer to a register frame for role: the
// registered frame, or the refusal as a *proto.Error (a refused register
// is answered with an error frame without requestId).
func (c *Client) AwaitRegistered(ctx context.Context, role string) (proto.Registered, error) {
	var r proto.Registered
	raw, err := c.Await(ctx, proto.TypeRegistered, "", "")
	if err != nil {
		return r, fmt.Errorf("register as %s: %w", role, err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("decode registered: %w", err)
	}
	return r, nil
}

// Send sends a send (or broadcast) frame and waits for its ACK, matched by
// the frame's requestId (one is made when f has none): the ACK of a
// duplicate (same sender, header number and body) repeats the first copy's
// messageId, not f's.
func (c *Client) Send(ctx context.Context, f proto.Frame) (proto.Ack, []byte, error) {
	f, err := c.WriteSend(ctx, f)
	if err != nil {
		return proto.Ack{}, nil, err
	}
	return c.AwaitAck(ctx, f)
}

// WriteSend writes a send (or broadcast) frame without waiting for its
// ACK, and returns it as written (its type and requestId filled in) for
// AwaitAck.
func (c *Client) WriteSend(ctx context.Context, f proto.Frame) (proto.Frame, error) {
	if f.Type == "" {
		f.Type = proto.TypeSend
	}
	if f.RequestID == "" {
		c.sends++
		f.RequestID = "send-" + strconv.FormatInt(c.sends, 10)
	}
	return f, c.WriteJSON(ctx, f)
}

// AwaitAck waits for the ACK of the send frame f, as WriteSend returned it.
func (c *Client) AwaitAck(ctx context.Context, f proto.Frame) (proto.Ack, []byte, error) {
	var ack proto.Ack
	raw, err := c.Await(ctx, proto.TypeSendAck, f.RequestID, f.MessageID)
	if err != nil {
		return ack, raw, err
	}
	if err := json.Unmarshal(raw, &ack); err != nil {
		return ack, raw, fmt.Errorf("decode send-ack: %w", err)
	}
	return ack, raw, nil
}

// Request sends f and waits for a frame of type want with the same requestId.
func (c *Client) Request(ctx context.Context, f proto.Frame, want string, out any) error {
	if err := c.WriteJSON(ctx, f); err != nil {
		return err
	}
	raw, err := c.Await(ctx, want, f.RequestID, "")
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode %s: %w", want, err)
		}
	}
	return nil
}

// IsClosed reports whether err means the hub closed the connection.
func IsClosed(err error) bool {
	return CloseStatus(err) != -1 || errors.Is(err, context.Canceled)
}

// CloseStatus is the status of the close frame err carries, or -1.
func CloseStatus(err error) int {
	if ce, ok := errors.AsType[*CloseError](err); ok {
		return ce.Code
	}
	return -1
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80])
	}
	return string(b)
}
