package mcpserver_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/broker/proto"
	"hm/internal/mcpserver"
)

// catchChannel passes every message through but channel notifications,
// which the SDK client does not know: those go to got.
type catchChannel struct {
	mcp.Transport
	got chan mcpserver.ChannelParams
}

func (c *catchChannel) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &catchConn{Connection: conn, got: c.got}, nil
}

type catchConn struct {
	mcp.Connection
	got chan mcpserver.ChannelParams
}

func (c *catchConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == mcpserver.ChannelNotification {
			var p mcpserver.ChannelParams
			if err := json.Unmarshal(req.Params, &p); err == nil {
				c.got <- p
			}
			continue
		}
		return msg, nil
	}
}

// TestChannel: `hm mcp --channel` declares claude/channel and pushes each
// new message to its role as notifications/claude/channel, once, and not
// the role's own messages; reading it changes nothing (still unread).
func TestChannel(t *testing.T) {
	h := startHub(t)
	builder, _ := connect(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("builder"), "SQUIDRUN_ROLE=builder"))

	arch, got, stderr := channelClient(t, env(h.root, "HM_TOKEN="+h.Tokens.Issue("architect"), "SQUIDRUN_ROLE=architect"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, ok := arch.InitializeResult().Capabilities.Experimental[mcpserver.ChannelCapability]; !ok {
		t.Fatalf("capabilities %+v lack %s", arch.InitializeResult().Capabilities, mcpserver.ChannelCapability)
	}

	send := func(cs *mcp.ClientSession, to, body string) proto.Ack {
		return result[proto.Ack](t, cs, mcpserver.ToolSend, map[string]any{"to": to, "body": body})
	}
	// The subscription starts after initialize: send until one arrives.
	var first mcpserver.ChannelParams
	sent := map[string]bool{}
wait:
	for {
		ack := send(builder, "architect", "are you there?")
		sent[ack.MessageID] = true
		select {
		case first = <-got:
			break wait
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("no channel notification\n%s", stderr.String())
		}
	}
	if !sent[first.Meta["message_id"]] || first.Meta["from"] != "BUILDER" || first.Meta["seq"] == "" || !strings.Contains(first.Content, "are you there?") {
		t.Fatalf("first notification %+v", first)
	}
	// Drain the pushes of earlier sends.
	for len(got) > 0 || func() bool { time.Sleep(300 * time.Millisecond); return len(got) > 0 }() {
		<-got
	}

	own := send(arch, "builder", "not for me")
	direct := send(builder, "architect", "[TASK] parse the logs")
	all := send(builder, "all", "[FYI] standup")
	var pushed []mcpserver.ChannelParams
	for len(pushed) < 2 {
		select {
		case p := <-got:
			pushed = append(pushed, p)
		case <-ctx.Done():
			t.Fatalf("pushed %+v, want 2\n%s", pushed, stderr.String())
		}
	}
	select {
	case p := <-got:
		t.Errorf("one more push: %+v", p)
	case <-time.After(500 * time.Millisecond):
	}
	if pushed[0].Meta["message_id"] != direct.MessageID || pushed[1].Meta["message_id"] != all.MessageID {
		t.Errorf("pushed %+v; want %s then %s (not %s, the role's own)", pushed, direct.MessageID, all.MessageID, own.MessageID)
	}
	if !strings.HasPrefix(pushed[0].Content, "(BUILDER #") || !strings.Contains(pushed[0].Content, "[TASK] parse the logs") {
		t.Errorf("content %q", pushed[0].Content)
	}
	// Pushing is not proof: the message is still unread until hm_ack.
	inbox := result[proto.InboxResult](t, arch, mcpserver.ToolInbox, map[string]any{"limit": 200})
	unread := map[string]bool{}
	for _, m := range inbox.Messages {
		unread[m.MessageID] = m.Unread
	}
	if !unread[direct.MessageID] || !unread[all.MessageID] {
		t.Errorf("pushed messages not unread: %+v", inbox.Messages)
	}
}

// channelClient runs `hm mcp --channel` with the environment env and
// connects to it; what it pushes arrives on got. The session is closed at
// the test's end; stderr is the server's, for failure messages.
func channelClient(t *testing.T, env []string) (arch *mcp.ClientSession, got chan mcpserver.ChannelParams, stderr *strings.Builder) {
	t.Helper()
	cmd := exec.Command(hmBinary(t), "mcp", "--channel")
	cmd.Env = env
	stderr = &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: stderr}
	got = make(chan mcpserver.ChannelParams, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "hm-test", Version: "1"}, nil)
	arch, err := c.Connect(ctx, &catchChannel{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, got: got}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := arch.Close(); err != nil {
			t.Errorf("close: %v\n%s", err, stderr.String())
		}
	})
	return arch, got, stderr
}
