package cockpit_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/hub"
)

// TestConnectionBudgetsOnHub floods, on a real hub, every connection
// budget at once with real sockets (connections on / without a token, the
// cockpit's /ui/ws, and /attach/ with /ui/attach/ together); one more of
// each kind gets HTTP 503 naming its budget, and an agent, its token in
// the upgrade, still connects and sends.
func TestConnectionBudgetsOnHub(t *testing.T) {
	t.Parallel()
	ch := startCockpitHub(t, func(o *hub.Options) { o.MaxUnregistered, o.MaxOperatorConns, o.MaxAttach = 2, 2, 2 })
	c, _ := loginSession(t, ch.base, ch.token)
	bearer := http.Header{"Authorization": {"Bearer " + ch.token}}
	tests := []struct {
		name  string
		flood []string // URLs opened and kept open
		more  string   // one more of the kind
		hdr   http.Header
		kind  string
	}{
		{"connections without a token", []string{ch.wsURL("/"), ch.wsURL("/")}, ch.wsURL("/"), nil, "connections without a token"},
		{"cockpit connections", []string{ch.wsURL("/ui/ws"), ch.wsURL("/ui/ws")}, ch.wsURL("/ui/ws"), nil, "cockpit connections"},
		{"attach, by token and by cookie", []string{ch.wsURL("/attach/architect?mode=view"), ch.wsURL("/ui/attach/oracle?mode=view")}, ch.wsURL("/attach/oracle?mode=view"), bearer, "attach connections"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, u := range tc.flood {
				opts := &websocket.DialOptions{HTTPClient: c}
				if strings.Contains(u, "/attach/") && !strings.Contains(u, "/ui/") {
					opts.HTTPHeader = bearer
				}
				conn, resp, err := websocket.Dial(t.Context(), u, opts)
				if err != nil {
					t.Fatalf("flood %s: %v (%v)", u, err, resp)
				}
				t.Cleanup(func() { conn.CloseNow() })
			}
			_, resp, err := websocket.Dial(t.Context(), tc.more, &websocket.DialOptions{HTTPClient: c, HTTPHeader: tc.hdr})
			if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("one more: err %v, resp %v; want 503", err, resp)
			}
			body, _ := io.ReadAll(resp.Body)
			if want := "connection limit for " + tc.kind; !strings.Contains(string(body), want) {
				t.Fatalf("503 body %q; want %q", body, want)
			}
		})
	}
	tok := ch.h.Tokens.Issue("oracle")
	a, err := client.DialToken(t.Context(), ch.wsURL("/"), tok)
	if err != nil {
		t.Fatalf("agent after the floods: %v", err)
	}
	defer a.CloseNow()
	if _, err := a.Register(t.Context(), "oracle", tok, false); err != nil {
		t.Fatal(err)
	}
	ack, _, err := a.Send(t.Context(), proto.Frame{Type: proto.TypeSend, Target: "architect", Content: "through the floods"})
	if err != nil || !ack.OK {
		t.Fatalf("send after the floods: %+v %v", ack, err)
	}
}
