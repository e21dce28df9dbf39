// Package mcpserver is `hm mcp`: a Model Context Protocol server (over
// stdio, with the official SDK, github.com/modelcontextprotocol/go-sdk) that
// gives an agent hm's messaging as tools. It is a client of the hub: it
// talks to it over the WebSocket as the pane's role (its HM_TOKEN), sends
// with send frames, acknowledges with message-ack, and reads with query
// frames, so everything it does is what any hm client may do, scoped by the
// hub to that role. See docs/protocol.md §13.
package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names.
const (
	ToolSend     = "hm_send"
	ToolInbox    = "hm_inbox"
	ToolAck      = "hm_ack"
	ToolSearch   = "hm_search"
	ToolTimeline = "hm_timeline"
	ToolGet      = "hm_get"
	ToolStatus   = "hm_status"
)

// Config configures a Server.
type Config struct {
	// Dial connects and registers to the hub (required).
	Dial DialFunc
	// Role is the role the server expects to act as, for its
	// instructions; the hub decides (the registered role).
	Role string
	// Version is reported to clients as the server's version.
	Version string
	// Timeout bounds each tool call's exchange with the hub (default 10s).
	Timeout time.Duration
	Logger  *slog.Logger
	// Channel declares the experimental claude/channel capability; serve
	// with RunChannel to push the role's messages as notifications.
	Channel bool
}

// Server is the hm MCP server.
type Server struct {
	mcp *mcp.Server
	hub *hubConn
	log *slog.Logger

	initialized chan struct{} // closed when a client has initialized
	initOnce    sync.Once
}

// New returns a server with hm's tools.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{hub: &hubConn{dial: cfg.Dial, timeout: cfg.Timeout, log: cfg.Logger}, log: cfg.Logger, initialized: make(chan struct{})}
	caps := &mcp.ServerCapabilities{}
	instr := instructions(cfg.Role)
	if cfg.Channel {
		caps.Experimental = map[string]any{ChannelCapability: map[string]any{}}
		instr += channelInstructions
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "hm", Title: "hm coordination hub", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instr,
		Capabilities: caps,
	})
	// A client is ready once it has sent anything after initialize: the
	// initialized notification (legacy handshake), server/discover (the
	// 2026-07-28 protocol has no initialize), or any request.
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err == nil && method != "initialize" {
				s.initOnce.Do(func() { close(s.initialized) })
			}
			return res, err
		}
	})
	s.addTools()
	return s
}

// MCP returns the SDK server (tests connect it to in-memory transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t (for `hm mcp`, stdin and stdout) until the
// client disconnects or ctx ends, then closes the hub connection.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.hub.close()
	return s.mcp.Run(ctx, t)
}

// Close closes the hub connection (after serving sessions with MCP()).
func (s *Server) Close() { s.hub.close() }

const channelInstructions = `
Messages to you also arrive as <channel source="hm" message_id="…" from="ARCH" seq="…"> events: the body is the message. Receiving one proves nothing to the sender: act on it, then hm_ack its message_id (or reply with hm_send and reply_to).`

func instructions(role string) string {
	who := "the role hm registers you as"
	if role != "" {
		who = "role " + role
	}
	return fmt.Sprintf(`hm routes messages between the agents of a team; you act as %s.
- hm_send sends a message (the hub adds your header "(ROLE #N): "); reply_to names the message you answer.
- hm_inbox lists what you received and have not acknowledged; reading changes nothing.
- hm_ack acknowledges messages once you have acted on them: they become delivered.verified, and an [ACK REQUIRED] you owe is answered.
- hm_search, hm_timeline and hm_get read the message history; hm_status shows the team's panes, your obligations and unread count.
Typed messages in your terminal end with [hm:<messageId>]: that id is what hm_ack and hm_get take.`, who)
}
