package testutil

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
)

// WebSocketServer serves WebSocket connections upgraded by coder/websocket
// (the hub's library), running serve on each until it returns, and closes
// the server when t ends. The test's ws:// URL is "ws" + the server's URL
// without "http".
func WebSocketServer(t testing.TB, serve func(ctx context.Context, c *websocket.Conn)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("websocket accept: %v", err)
			return
		}
		defer c.CloseNow()
		serve(r.Context(), c)
	}))
	t.Cleanup(srv.Close)
	return srv
}
