package broker_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// TestConnectionBudgets floods each connection budget with real sockets:
// the next connection of that kind gets HTTP 503 naming its budget, and
// an agent (its token in the upgrade) still connects, registers and
// sends. Connections without a token that register move to the agents'
// budget; when that is full their register is refused with
// capacity_reached.
func TestConnectionBudgets(t *testing.T) {
	t.Parallel()
	const agents, anon, cockpit = 3, 2, 2
	tests := []struct {
		name string
		// flood opens the budget's connections; extra is one more of the
		// kind, over the budget.
		flood func(h *harness, op string)
		extra func(h *harness, op string) (*http.Response, error)
		kind  string // named in the 503
	}{
		{"connections without a token", func(h *harness, _ string) {
			for range anon {
				h.dial()
			}
		}, func(h *harness, _ string) (*http.Response, error) { return dialRaw(t, h.url, "") }, "connections without a token"},
		{"a token that is not valid counts as none", func(h *harness, _ string) {
			for range anon {
				if _, err := dialRaw(t, h.url, "not-a-token"); err != nil {
					t.Fatal(err)
				}
			}
		}, func(h *harness, _ string) (*http.Response, error) { return dialRaw(t, h.url, "") }, "connections without a token"},
		{"cockpit connections", func(_ *harness, op string) {
			for range cockpit {
				if _, err := dialRaw(t, op, ""); err != nil {
					t.Fatal(err)
				}
			}
		}, func(_ *harness, op string) (*http.Response, error) { return dialRaw(t, op, "") }, "cockpit connections"},
		{"agents (registered, or a token in the upgrade)", func(h *harness, _ string) {
			h.as("oracle", false) // registered after dialing without a token
			for range agents - 1 {
				if _, err := dialRaw(t, h.url, operatorToken); err != nil {
					t.Fatal(err)
				}
			}
		}, func(h *harness, _ string) (*http.Response, error) {
			return dialRaw(t, h.url, h.tokens.Issue("builder"))
		}, "agents"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *broker.Config, _ *broker.Deps) {
				c.MaxConns, c.MaxUnregistered, c.MaxOperatorConns = agents, anon, cockpit
				c.RegisterTimeout = time.Hour // the flood stays for the test
			})
			opSrv := httptest.NewServer(http.HandlerFunc(h.b.ServeOperatorWS))
			t.Cleanup(opSrv.Close)
			op := "ws" + strings.TrimPrefix(opSrv.URL, "http") + "/"
			tc.flood(h, op)
			resp, err := tc.extra(h, op)
			if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("one more: err %v, resp %v; want 503", err, resp)
			}
			body, _ := io.ReadAll(resp.Body)
			if want := "connection limit for " + tc.kind; !strings.Contains(string(body), want) {
				t.Fatalf("503 body %q; want %q", body, want)
			}
			if tc.kind == "agents" {
				return
			}
			a := h.as("architect", false)
			if ack := send(t, a, proto.Frame{Type: "send", Target: "oracle", Content: "still here"}); !ack.OK {
				t.Fatalf("agent after the flood: %+v", ack)
			}
		})
	}
	t.Run("register with the agents' budget full", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *broker.Config, _ *broker.Deps) { c.MaxConns = 1 })
		h.as("oracle", false)
		c := h.dial()
		_, err := c.Register(ctxT(t), "architect", h.tokens.Issue("architect"), false)
		var pe *proto.Error
		if !errors.As(err, &pe) || pe.Code != status.CodeCapacityReached || !strings.Contains(pe.Message, "connection limit for agents (1)") {
			t.Fatalf("register = %v; want capacity_reached naming the agents' budget", err)
		}
		poll.For(t, 10*time.Second, func() error {
			return poll.Want(h.b.ConnCount() == 1, "refused connection closed, %d open", h.b.ConnCount())
		})
		h.dial() // its place without a token was given back
	})
}

// dialRaw opens a WebSocket to url, with token as "Authorization: Bearer"
// when set, and keeps it open until the test ends.
func dialRaw(t *testing.T, url, token string) (*http.Response, error) {
	t.Helper()
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if token != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.Dial(ctxT(t), url, opts)
	if err == nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return resp, err
}
