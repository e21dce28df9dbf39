package broker

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Corked writes (issue #18). coder/websocket flushes every message to the
// socket, one write system call per frame; under load a connection's
// frames come in bursts (the ACKs of a group commit, the messages it
// routed), and those system calls, on both ends, were the largest cost
// outside the ledger. The writer loop corks the connection, writes every
// frame it has queued, and uncorks: one write for the burst. A frame is
// "written" (its onWritten runs, e.g. delivered.websocket) only once the
// uncork's write succeeded. A lone frame costs what it did.

// maxCork bounds the bytes one uncork sends.
const maxCork = 64 << 10

// corkConn is the hijacked connection under a WebSocket: while corked,
// writes are kept and sent together at uncork. Writes from other
// goroutines (coder/websocket's pongs and close frames) are kept the same
// way while corked and sent directly otherwise.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
	closed bool // Close sent what was kept: uncork has nothing it may count
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// cork, uncork: a nil corkConn (a connection the hub did not accept
// itself, as tests' fake sockets) writes each frame as it comes.
func (c *corkConn) cork() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was kept, waiting at most timeout for the peer to take
// it.
func (c *corkConn) uncork(timeout time.Duration) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if c.closed {
		return fmt.Errorf("uncork: %w", net.ErrClosed)
	}
	if len(c.buf) == 0 {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("uncork: %w", err)
	}
	_, err := c.Conn.Write(c.buf)
	if derr := c.Conn.SetWriteDeadline(time.Time{}); err == nil && derr != nil {
		err = derr
	}
	if cap(c.buf) > 4*maxCork {
		c.buf = nil // one huge frame does not pin its buffer
	} else {
		c.buf = c.buf[:0]
	}
	if err != nil {
		return fmt.Errorf("uncork: %w", err)
	}
	return nil
}

// closeFlush bounds how long Close waits for the peer to take what was
// kept.
const closeFlush = 100 * time.Millisecond

// Close sends what was kept before closing: coder/websocket answers a
// peer's close frame from its read goroutine and closes the connection at
// once, and that answer may be kept by a cork. A write in progress (an
// uncork, or a direct write the peer is not taking) holds mu: the
// connection is closed under it, as without a cork.
func (c *corkConn) Close() error {
	if c.mu.TryLock() {
		if len(c.buf) > 0 {
			_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFlush))
			_, _ = c.Conn.Write(c.buf)
			c.buf = nil
		}
		c.closed = true
		c.mu.Unlock()
	}
	return c.Conn.Close()
}

// corkWriter hands coder/websocket's Accept a connection it can cork.
type corkWriter struct {
	http.ResponseWriter
	conn *corkConn // set by Hijack
}

func (w *corkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack wraps the connection, and the buffered writer over it, in a
// corkConn.
func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("hijack: %T is not an http.Hijacker", w.ResponseWriter)
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil { // empty after a hijack; never drop a byte
		_ = conn.Close()
		return nil, nil, fmt.Errorf("hijack: %w", err)
	}
	w.conn = &corkConn{Conn: conn}
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}
