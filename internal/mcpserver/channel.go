package mcpserver

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// Claude Code channels (research preview): a server that declares the
// experimental capability ChannelCapability may push
// ChannelNotification notifications into the session.
const (
	ChannelCapability   = "claude/channel"
	ChannelNotification = "notifications/claude/channel"
)

// ChannelParams is a channel notification's params: the message as the
// agent reads it, and attributes Claude shows with it.
type ChannelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

// channelTransport records the connection of the session it serves, so
// that the channel can write its notifications to it (the SDK sends only
// the methods it knows; a Connection's Write may be called concurrently).
type channelTransport struct {
	mcp.Transport
	conn chan mcp.Connection
}

func (t *channelTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err == nil {
		t.conn <- c
	}
	return c, err
}

// runChannel follows the hub's ledger for the role with a read-only
// journal subscription (a registered, non-listening connection: nothing
// is handed over or marked, so delivery, typing and hooks go on as
// without it) and pushes each new message to the role, once, as a
// channel notification, after the client has initialized. It reconnects
// after a failure; messages committed while it was not subscribed are not
// pushed (hm_inbox lists them).
func (s *Server) runChannel(ctx context.Context, conn mcp.Connection) {
	select {
	case <-s.initialized:
	case <-ctx.Done():
		return
	}
	seen := map[string]bool{}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.followJournal(ctx, func(p ChannelParams) error {
			raw, err := json.Marshal(p)
			if err != nil {
				return err
			}
			return conn.Write(ctx, &jsonrpc.Request{Method: ChannelNotification, Params: raw})
		}, seen)
		if ctx.Err() != nil {
			return
		}
		s.log.Info("hm mcp: channel: journal subscription ended", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// followJournal subscribes on a connection of its own and calls push for
// each new message to the registered role, until an error.
func (s *Server) followJournal(ctx context.Context, push func(ChannelParams) error, seen map[string]bool) error {
	cl, _, err := s.hub.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.CloseNow()
	var st struct {
		Result proto.StatusResult `json:"result"`
	}
	if err := cl.Request(ctx, proto.Frame{Type: proto.TypeQuery, Op: proto.QueryStatus, RequestID: "channel-status"}, proto.TypeResponse, &st); err != nil {
		return err
	}
	mine := readerOf(st.Result)
	if err := cl.WriteJSON(ctx, proto.Frame{Type: proto.TypeSubscribe, Topics: []string{"journal"}}); err != nil {
		return err
	}
	for {
		typ, raw, err := cl.Next(ctx)
		if err != nil {
			return err
		}
		if typ != proto.TypeJournalEvent {
			continue
		}
		var ev proto.JournalEvent
		if json.Unmarshal(raw, &ev) != nil {
			continue
		}
		r := ev.Row
		row := journal.Message{SenderRole: r.SenderRole, TargetRole: r.TargetRole, Status: r.Status}
		if r.Event != status.EventBrokered || seen[r.MessageID] || !mine.Received(row) {
			continue
		}
		if len(seen) > 10000 {
			clear(seen)
		}
		seen[r.MessageID] = true
		from := r.Header
		if from == "" {
			from = r.SenderRole
		}
		p := ChannelParams{
			Content: roles.ViewContent(r.RawBody),
			Meta:    map[string]string{"message_id": r.MessageID, "from": from, "seq": strconv.FormatInt(r.Seq, 10)},
		}
		if err := push(p); err != nil {
			return err
		}
	}
}

// RunChannel serves one client over t as Run does, and also pushes the
// role's new messages as Claude channel notifications (`hm mcp
// --channel`).
func (s *Server) RunChannel(ctx context.Context, t mcp.Transport) error {
	ct := &channelTransport{Transport: t, conn: make(chan mcp.Connection, 1)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case c := <-ct.conn:
			s.runChannel(ctx, c)
		case <-ctx.Done():
		}
	}()
	return s.Run(ctx, ct)
}
