package broker_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/status"
)

// TestServeOperatorWS: a connection accepted through ServeOperatorWS (the
// cockpit's /ui/ws, authenticated by its caller) registers as the operator
// without a token, may take any role, still has a sent token checked, and
// reads frames up to the broker's own limit; "/" still refuses a register
// without a token.
func TestServeOperatorWS(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := httptest.NewServer(http.HandlerFunc(h.b.ServeOperatorWS))
	t.Cleanup(srv.Close)
	opURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ui/ws"
	dialOp := func() *client.Client {
		c, err := client.Dial(ctxT(t), opURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	for _, role := range []string{"user", "", "builder"} {
		c := dialOp()
		reg, err := c.Register(ctxT(t), role, "", false)
		want := role
		if want == "" {
			want = "user"
		}
		if err != nil || reg.Role != want {
			t.Fatalf("register %q without a token: %+v %v", role, reg, err)
		}
		if role == "user" {
			ack := send(t, c, proto.Frame{Target: "builder", Content: "from the operator socket", MessageID: "m-op-1"})
			if !ack.OK || ack.Header != "USER" {
				t.Fatalf("send as user: %+v", ack)
			}
			// The broker's frame limit, not coder/websocket's 32 KiB.
			if err := c.WriteJSON(ctxT(t), proto.Frame{Type: proto.TypeSend, Target: "builder", Content: strings.Repeat("x", 300<<10)}); err != nil {
				t.Fatal(err)
			}
			_, err := c.Await(ctxT(t), "none", "", "")
			var pe *proto.Error
			if !errors.As(err, &pe) || pe.Code != status.CodeTooLarge {
				t.Fatalf("a 300 KiB frame: %v, want too_large", err)
			}
		}
	}

	// A token that is sent is still checked.
	c := dialOp()
	if _, err := c.Register(ctxT(t), "user", "wrong", false); err == nil {
		t.Fatal("register with a wrong token on the operator socket succeeded")
	}

	// "/" is unchanged: no token, no registration.
	plain := h.dial()
	_, err := plain.Register(ctxT(t), "user", "", false)
	var pe *proto.Error
	if !errors.As(err, &pe) || pe.Code != status.CodeUnauthorized {
		t.Fatalf("register without a token on /: %v, want unauthorized", err)
	}
}
