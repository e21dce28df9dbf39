package mcpserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"hm/internal/mcpserver"
)

// BenchmarkToolCall measures an `hm mcp` tool call's round trip as an MCP
// client sees it: JSON-RPC over the subprocess's stdin and stdout, the
// server's frames to a real hub over the WebSocket, and back. hm_send
// includes the ledger commit before the ACK; hm_inbox is a read (the
// builder's inbox, 20 messages with bodies). Reports p50-ms and p99-ms.
func BenchmarkToolCall(b *testing.B) {
	h := startHub(b)
	arch, _ := connect(b, env(h.root, "HM_TOKEN="+h.Tokens.Issue("architect"), "SQUIDRUN_ROLE=architect"))
	builder, _ := connect(b, env(h.root, "HM_TOKEN="+h.Tokens.Issue("builder"), "SQUIDRUN_ROLE=builder"))
	for range 20 {
		call(b, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": "a message for the inbox to read back"})
	}
	for _, bc := range []struct {
		name string
		cs   *mcp.ClientSession
		tool string
		args map[string]any
	}{
		{mcpserver.ToolSend, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": "benchmark message"}},
		{mcpserver.ToolInbox, builder, mcpserver.ToolInbox, map[string]any{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res, err := bc.cs.CallTool(ctx, &mcp.CallToolParams{Name: bc.tool, Arguments: bc.args})
				if err != nil {
					b.Fatalf("%s: %v", bc.tool, err)
				}
				if res.IsError {
					b.Fatalf("%s: %s", bc.tool, text(res))
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			ms := func(q float64) float64 {
				return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
