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
// builder's first 20 of 25 unread messages, with bodies, and the unread
// count). Reports p50-ms and p99-ms.
func BenchmarkToolCall(b *testing.B) {
	for _, bc := range []struct {
		tool string
		args map[string]any
		as   string // the role calling; architect sends to builder
	}{
		{mcpserver.ToolSend, map[string]any{"to": "builder", "body": "benchmark message"}, "architect"},
		{mcpserver.ToolInbox, map[string]any{}, "builder"},
	} {
		b.Run(bc.tool, func(b *testing.B) {
			// A hub per run, so that the inbox read holds the same 25
			// unread messages (more than a page: the count walks them)
			// however many sends ran before.
			h := startHub(b)
			arch, _ := connect(b, env(h.root, "HM_TOKEN="+h.Tokens.Issue("architect"), "SQUIDRUN_ROLE=architect"))
			builder, _ := connect(b, env(h.root, "HM_TOKEN="+h.Tokens.Issue("builder"), "SQUIDRUN_ROLE=builder"))
			for range 25 {
				call(b, arch, mcpserver.ToolSend, map[string]any{"to": "builder", "body": "a message for the inbox to read back"})
			}
			cs := map[string]*mcp.ClientSession{"architect": arch, "builder": builder}[bc.as]
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bc.tool, Arguments: bc.args})
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
