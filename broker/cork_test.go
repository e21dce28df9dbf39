package broker

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// countingConn counts the writes that reach the network.
type countingConn struct {
	net.Conn
	writes atomic.Int32
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// pipeReader collects what arrives at the other end of a pipe.
type pipeReader struct {
	mu   sync.Mutex
	got  bytes.Buffer
	done chan struct{}
}

func readPipe(c net.Conn) *pipeReader {
	r := &pipeReader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			r.mu.Lock()
			r.got.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *pipeReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.String()
}

func TestCorkConn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		cork       bool
		closePeer  bool
		wantWrites int32 // -1: not checked
		wantErr    bool
	}{
		{name: "uncorked writes go straight out", wantWrites: 3},
		{name: "corked writes go out in one write at uncork", cork: true, wantWrites: 1},
		{name: "uncork to a peer that is gone fails", cork: true, closePeer: true, wantWrites: -1, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := net.Pipe()
			defer a.Close()
			cc := &countingConn{Conn: a}
			c := &corkConn{Conn: cc}
			var r *pipeReader
			if tc.closePeer {
				b.Close()
			} else {
				r = readPipe(b)
				defer func() { b.Close(); <-r.done }()
			}
			if tc.cork {
				c.cork()
			}
			for _, s := range []string{"one ", "two ", "three"} {
				if _, err := c.Write([]byte(s)); err != nil {
					t.Fatalf("write %q: %v", s, err)
				}
			}
			if tc.cork && cc.writes.Load() != 0 {
				t.Fatalf("%d writes reached the network while corked", cc.writes.Load())
			}
			err := c.uncork(time.Second)
			if (err != nil) != tc.wantErr {
				t.Fatalf("uncork = %v, want error %v", err, tc.wantErr)
			}
			if n := cc.writes.Load(); tc.wantWrites >= 0 && n != tc.wantWrites {
				t.Fatalf("%d writes reached the network, want %d", n, tc.wantWrites)
			}
			if r != nil {
				deadline := time.Now().Add(5 * time.Second)
				for r.String() != "one two three" && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if got := r.String(); got != "one two three" {
					t.Fatalf("peer got %q", got)
				}
			}
		})
	}
}

// corkSocket writes frames into a corkConn as coder/websocket does.
type corkSocket struct {
	*fakeSocket
	c *corkConn
}

func (s *corkSocket) Write(_ context.Context, _ websocket.MessageType, p []byte) error {
	_, err := s.c.Write(p)
	return err
}

// TestCorkedBurstFailure: when the corked burst cannot be sent, no frame
// of it counts as written (no delivered.websocket for a message the client
// never got) and the connection closes.
func TestCorkedBurstFailure(t *testing.T) {
	t.Parallel()
	h := newFrameHarness(t)
	a, b := net.Pipe()
	b.Close()
	defer a.Close()
	cc := &corkConn{Conn: a}
	sock := &corkSocket{fakeSocket: newFakeSocket(), c: cc}
	c := h.b.newConn(sock)
	c.cork = cc
	var written atomic.Int32
	batch := []outFrame{
		{data: []byte(`{"type":"message"}`), onWritten: func() { written.Add(1) }},
		{data: []byte(`{"type":"message"}`), onWritten: func() { written.Add(1) }},
	}
	if c.writeBatch(batch) {
		t.Fatal("writeBatch reported the connection usable after the burst failed")
	}
	if n := written.Load(); n != 0 {
		t.Fatalf("%d frames of a burst that never left counted as written", n)
	}
	select {
	case <-c.ctx.Done():
	default:
		t.Fatal("the connection is still open")
	}
}

// TestPeerCloseDuringBurst: a client that closes while the hub writes it a
// burst gets the hub's close frame back (a clean close handshake), corked
// or not. coder/websocket answers a close from the read goroutine and
// closes the connection at once: an answer kept by the cork must still go
// out.
func TestPeerCloseDuringBurst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cork bool
	}{
		{"uncorked", false},
		{"corked", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newFrameHarness(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				cw := &corkWriter{ResponseWriter: w}
				ws, err := websocket.Accept(cw, r, nil)
				if err != nil {
					return
				}
				c := h.b.newConn(ws)
				if tc.cork {
					c.cork = cw.conn
				}
				go func() { // the read loop: answers pings and the close
					for {
						_, rd, err := ws.Reader(context.Background())
						if err != nil {
							return
						}
						if _, err := io.Copy(io.Discard, rd); err != nil {
							return
						}
					}
				}()
				data := bytes.Repeat([]byte("x"), 100)
				batch := make([]outFrame, 32)
				for {
					for i := range batch {
						batch[i] = outFrame{data: data}
					}
					if !c.writeBatch(batch) {
						return
					}
				}
			}))
			defer srv.Close()
			for trial := range 30 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				ws, _, err := websocket.Dial(ctx, "ws://"+srv.Listener.Addr().String(), nil)
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				for range 50 + trial*7 {
					if _, _, err := ws.Read(ctx); err != nil {
						cancel()
						t.Fatalf("trial %d: read: %v", trial, err)
					}
				}
				err = ws.Close(websocket.StatusNormalClosure, "bye")
				cancel()
				if err != nil {
					t.Fatalf("trial %d: close handshake: %v", trial, err)
				}
			}
		})
	}
}
