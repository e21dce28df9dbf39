package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/internal/ground/testutil"
)

// coderServer serves a coder/websocket server (the hub's library) running
// serve on each connection, and returns its ws:// URL.
func coderServer(t *testing.T, serve func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	return "ws" + strings.TrimPrefix(testutil.WebSocketServer(t, serve).URL, "http")
}

// rawServer answers the upgrade by hand and then writes frames as given
// (server frames are not masked), then reads until the client hangs up.
func rawServer(t *testing.T, frames ...[]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer nc.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + wsAccept(r.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n")
		for _, f := range frames {
			brw.Write(f)
		}
		brw.Flush()
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		bufio.NewReader(nc).WriteTo(discard{})
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// serverFrame is an unmasked frame as a server writes it.
func serverFrame(fin bool, op byte, payload string) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	default:
		out = append(out, 126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	}
	return append(out, payload...)
}

func TestWSConnRead(t *testing.T) {
	big := strings.Repeat("x", 70<<10)
	cases := []struct {
		name    string
		frames  [][]byte
		limit   int64
		want    []string // messages read in order
		wantErr func(error) bool
	}{
		{name: "one text frame", frames: [][]byte{serverFrame(true, opText, `{"type":"welcome"}`)},
			want: []string{`{"type":"welcome"}`}},
		{name: "fragmented, a ping between the fragments", frames: [][]byte{
			serverFrame(false, opText, "hel"), serverFrame(true, opPing, "p"), serverFrame(true, opContinuation, "lo")},
			want: []string{"hello"}},
		{name: "close frame with a status", frames: [][]byte{
			serverFrame(true, opText, "a"), serverFrame(true, opClose, "\x0f\xa1bye")},
			want:    []string{"a"},
			wantErr: func(err error) bool { return CloseStatus(err) == 4001 && IsClosed(err) }},
		{name: "over the read limit", frames: [][]byte{serverFrame(true, opText, strings.Repeat("y", 200))}, limit: 100,
			wantErr: func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "read limit") && !IsClosed(err)
			}},
		{name: "continuation without a message", frames: [][]byte{serverFrame(true, opContinuation, "z")},
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "continuation") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 20
			}
			c, err := dialWS(t.Context(), rawServer(t, tc.frames...), nil, limit)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			for _, want := range tc.want {
				got, err := c.Read(t.Context())
				if err != nil || string(got) != want {
					t.Fatalf("Read = %q, %v; want %q", got, err, want)
				}
			}
			if tc.wantErr != nil {
				_, err := c.Read(t.Context())
				if !tc.wantErr(err) {
					t.Fatalf("last Read err = %v", err)
				}
			}
		})
	}
	t.Run("large message from coder/websocket", func(t *testing.T) {
		url := coderServer(t, func(ctx context.Context, s *websocket.Conn) {
			s.SetReadLimit(1 << 20)
			_, data, err := s.Read(ctx)
			if err != nil {
				return
			}
			s.Write(ctx, websocket.MessageText, append(data, '!'))
			s.Read(ctx) // until the client closes
		})
		c, err := dialWS(t.Context(), url, nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if err := c.Write(t.Context(), []byte(big)); err != nil {
			t.Fatal(err)
		}
		got, err := c.Read(t.Context())
		if err != nil || string(got) != big+"!" {
			t.Fatalf("Read = %d bytes, %v; want %d", len(got), err, len(big)+1)
		}
	})
}

// TestWSConnPingClose: a ping from the hub is answered while the client
// reads, and Close ends the connection with a normal closure the hub sees.
func TestWSConnPingClose(t *testing.T) {
	seen := make(chan error, 1)
	url := coderServer(t, func(ctx context.Context, s *websocket.Conn) {
		go func() {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := s.Ping(pctx); err != nil {
				seen <- err
				return
			}
			s.Write(ctx, websocket.MessageText, []byte("ponged"))
		}()
		_, _, err := s.Read(ctx)
		seen <- err
	})
	c, err := dialWS(t.Context(), url, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Read(t.Context())
	if err != nil || string(got) != "ponged" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-seen:
		if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("the server read %v, want a normal closure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the close")
	}
}

// TestWSConnCancel: a read whose context ends returns at once with the
// context's error, and the connection is closed.
func TestWSConnCancel(t *testing.T) {
	url := coderServer(t, func(ctx context.Context, s *websocket.Conn) { s.Read(ctx) })
	c, err := dialWS(t.Context(), url, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read err = %v, want the deadline", err)
	}
	if err := c.Write(t.Context(), []byte("x")); err == nil {
		t.Fatal("Write after a cancelled read succeeded")
	}
}

// TestWSConnRefused: an upgrade the server refuses fails with its status
// and reason; a server that is not there fails with the dial's *net.OpError
// (cmdline.HubError tells "no hub" by it).
func TestWSConnRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			http.Error(w, "hm: too many connections", http.StatusServiceUnavailable)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err == nil {
			c.CloseNow()
		}
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	_, err := dialWS(t.Context(), url, map[string]string{"Authorization": "Bearer bad"}, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "too many connections") {
		t.Fatalf("refused upgrade: err = %v", err)
	}
	c, err := dialWS(t.Context(), url, map[string]string{"Authorization": "Bearer good"}, 1<<20)
	if err != nil {
		t.Fatalf("accepted upgrade: %v", err)
	}
	c.CloseNow()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = dialWS(t.Context(), "ws://"+addr+"/", nil, 1<<20)
	if _, ok := errors.AsType[*net.OpError](err); !ok {
		t.Fatalf("no server: err = %v (%T), want a *net.OpError", err, err)
	}
}
