// This file is the client's WebSocket (RFC 6455) over a plain TCP
// connection: the upgrade request written by hand and the frames read and
// written here, without net/http. hm-send links this package for every
// message a pane sends; net/http's client (and crypto/tls, which it
// brings) more than doubled its binary, and its transport dials through
// goroutines of its own: about a millisecond of every send's start on a
// loaded machine (#36). The hub's side stays coder/websocket.

package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Frame opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// Close status codes the client sends (RFC 6455 §7.4.1).
const (
	statusNormalClosure = 1000
	statusProtocolError = 1002
	statusTooBig        = 1009
)

// closeWait bounds how long Close waits for the hub's close frame.
const closeWait = 5 * time.Second

// wsAcceptGUID is the GUID the Sec-WebSocket-Accept hash is made with.
const wsAcceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// CloseError is the close frame the hub ended the connection with.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("websocket closed: status %d: %s", e.Code, e.Reason)
}

// wsConn is one client WebSocket. Reads are one goroutine's at a time, as
// are writes; Close and CloseNow may come from any goroutine.
type wsConn struct {
	nc    net.Conn
	br    *bufio.Reader
	limit int64 // the largest message Read accepts

	readMu  sync.Mutex
	writeMu sync.Mutex

	closeOnce sync.Once
}

// dialWS opens a WebSocket to rawURL (ws://host:port/path), sending header
// with the upgrade request; the connection is closed when ctx ends before
// the hub answered the upgrade.
func dialWS(ctx context.Context, rawURL string, header map[string]string, limit int64) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", rawURL, err)
	}
	if u.Scheme != "ws" {
		return nil, fmt.Errorf("%q: only ws:// URLs are served", rawURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	c := &wsConn{nc: nc, br: bufio.NewReader(nc), limit: limit}
	err = c.handshake(u, header)
	if !stop() || err != nil {
		nc.Close()
		if err == nil || ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		return nil, fmt.Errorf("websocket upgrade: %w", err)
	}
	return c, nil
}

// handshake writes the upgrade request and checks the hub's answer.
func (c *wsConn) handshake(u *url.URL, header map[string]string) error {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	key := base64.StdEncoding.EncodeToString(nonce[:])
	path := u.RequestURI()
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n", path, u.Host, key)
	for k, v := range header {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(c.nc, req.String()); err != nil {
		return err
	}
	tp := textproto.NewReader(c.br)
	status, err := tp.ReadLine()
	if err != nil {
		return fmt.Errorf("read the upgrade answer: %w", err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return fmt.Errorf("read the upgrade answer: %w", err)
	}
	if code, _, _ := strings.Cut(strings.TrimPrefix(status, "HTTP/1.1 "), " "); code != "101" {
		return fmt.Errorf("expected handshake response status code 101 but got %q%s", status, c.answerBody(h))
	}
	switch {
	case !strings.EqualFold(h.Get("Upgrade"), "websocket"):
		return fmt.Errorf("upgrade answer without Upgrade: websocket")
	case h.Get("Sec-WebSocket-Accept") != wsAccept(key):
		return fmt.Errorf("upgrade answer with a wrong Sec-WebSocket-Accept")
	case h.Get("Sec-WebSocket-Extensions") != "":
		return fmt.Errorf("upgrade answer with extensions %q, none asked for", h.Get("Sec-WebSocket-Extensions"))
	}
	return nil
}

// wsAccept is the Sec-WebSocket-Accept a server answers key with.
func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + wsAcceptGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// answerBody is the start of a refused upgrade's body (the hub's reason),
// as ": <text>", or "".
func (c *wsConn) answerBody(h textproto.MIMEHeader) string {
	c.nc.SetReadDeadline(time.Now().Add(time.Second))
	body, _ := io.ReadAll(io.LimitReader(c.br, 512))
	if s := strings.TrimSpace(string(body)); s != "" {
		return ": " + s
	}
	return ""
}

// Read returns the next message's payload. Pings are answered and pongs
// skipped; a close frame from the hub is answered and returned as a
// *CloseError. When ctx ends first the connection is closed (a read cut
// off mid-frame leaves nothing to go on with).
func (c *wsConn) Read(ctx context.Context) ([]byte, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Unix(1, 0)) })
	data, err := c.readMessage()
	if !stop() {
		c.CloseNow()
		return nil, fmt.Errorf("read: %w", ctx.Err())
	}
	return data, err
}

// readMessage reads frames up to the end of one data message.
func (c *wsConn) readMessage() ([]byte, error) {
	var msg []byte
	started := false
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := c.writeFrame(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			return nil, c.peerClosed(payload)
		case opText, opBinary:
			if started {
				return nil, c.fail(statusProtocolError, "a new message inside a fragmented one")
			}
			started = true
		case opContinuation:
			if !started {
				return nil, c.fail(statusProtocolError, "a continuation without a message")
			}
		default:
			return nil, c.fail(statusProtocolError, fmt.Sprintf("unknown opcode %d", op))
		}
		if int64(len(msg)+len(payload)) > c.limit {
			return nil, c.fail(statusTooBig, fmt.Sprintf("message over the read limit of %d bytes", c.limit))
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// readFrame reads one frame and returns its payload, unmasked.
func (c *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return false, 0, nil, fmt.Errorf("read frame: %w", err)
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[0]&0x70 != 0 {
		return false, 0, nil, c.fail(statusProtocolError, "reserved bits set")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(c.br, b[:]); err != nil {
			return false, 0, nil, fmt.Errorf("read frame: %w", err)
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(c.br, b[:]); err != nil {
			return false, 0, nil, fmt.Errorf("read frame: %w", err)
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, c.fail(statusProtocolError, "control frame fragmented or over 125 bytes")
	}
	if n > uint64(c.limit) {
		return false, 0, nil, c.fail(statusTooBig, fmt.Sprintf("frame over the read limit of %d bytes", c.limit))
	}
	var mask [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(c.br, mask[:]); err != nil {
			return false, 0, nil, fmt.Errorf("read frame: %w", err)
		}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return false, 0, nil, fmt.Errorf("read frame: %w", err)
	}
	if masked {
		maskBytes(payload, mask)
	}
	return fin, op, payload, nil
}

// peerClosed answers the hub's close frame (payload) and returns it as a
// *CloseError; the connection is closed.
func (c *wsConn) peerClosed(payload []byte) error {
	ce := &CloseError{Code: 1005} // no status in the frame
	if len(payload) >= 2 {
		ce.Code = int(binary.BigEndian.Uint16(payload))
		ce.Reason = string(payload[2:])
	}
	echo := payload
	if len(echo) >= 2 {
		echo = echo[:2]
	}
	_ = c.writeFrame(opClose, echo)
	c.CloseNow()
	return ce
}

// fail closes the connection with code for a protocol breach and returns
// the error.
func (c *wsConn) fail(code uint16, why string) error {
	_ = c.writeFrame(opClose, closePayload(code, why))
	c.CloseNow()
	return fmt.Errorf("websocket: %s", why)
}

// Write sends data as one text message, within ctx.
func (c *wsConn) Write(ctx context.Context, data []byte) error {
	stop := context.AfterFunc(ctx, func() { c.nc.SetWriteDeadline(time.Unix(1, 0)) })
	err := c.writeFrame(opText, data)
	if !stop() {
		c.CloseNow()
		return fmt.Errorf("write: %w", ctx.Err())
	}
	return err
}

// writeFrame writes one final frame of op, masked as a client's must be,
// in one write.
func (c *wsConn) writeFrame(op byte, payload []byte) error {
	buf := make([]byte, 0, 14+len(payload))
	buf = append(buf, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		buf = append(buf, 0x80|byte(n))
	case n <= 0xffff:
		buf = append(buf, 0x80|126)
		buf = binary.BigEndian.AppendUint16(buf, uint16(n))
	default:
		buf = append(buf, 0x80|127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	var mask [4]byte
	binary.LittleEndian.PutUint32(mask[:], mrand.Uint32())
	buf = append(buf, mask[:]...)
	start := len(buf)
	buf = append(buf, payload...)
	maskBytes(buf[start:], mask)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.nc.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

func maskBytes(b []byte, mask [4]byte) {
	for i := range b {
		b[i] ^= mask[i&3]
	}
}

func closePayload(code uint16, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

// Close sends a normal close frame and waits, up to closeWait, for the
// hub's answer before closing the connection; when another goroutine is
// reading, that read sees the answer and Close does not wait.
func (c *wsConn) Close() error {
	err := c.writeFrame(opClose, closePayload(statusNormalClosure, ""))
	if err == nil && c.readMu.TryLock() {
		c.nc.SetReadDeadline(time.Now().Add(closeWait))
		for {
			_, op, _, rerr := c.readFrame()
			if rerr != nil || op == opClose {
				break
			}
		}
		c.readMu.Unlock()
	}
	c.CloseNow()
	return err
}

// CloseNow closes the connection without a close handshake.
func (c *wsConn) CloseNow() error {
	var err error
	c.closeOnce.Do(func() {
		err = c.nc.Close()
	})
	return err
}
