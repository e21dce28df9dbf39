package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// FuzzFrameDecoder feeds each input, as one text frame, straight to a
// connection's frame decoder and handlers (readFrame), in process: one broker
// and ledger serve the whole run, and each input gets two fresh connections,
// one unregistered and one registered as architect. Invariants: no panic;
// every frame the hub sends is a JSON object with a type, and every error
// frame and refused send-ack carries a protocol code; a frame that is too
// large, not a JSON object or of an unknown type gets the matching error
// frame; a frame of a known type gets its answer; and the connection still
// answers a heartbeat afterwards (with not_registered when it is not
// registered), unless the frame was a register refused as unauthorized,
// which (only) closes it. The unregistered connection is never sent data:
// only registered, error frames, and a refusal answering background-agent.
func FuzzFrameDecoder(f *testing.F) {
	for _, s := range []string{`{"type":"register","role":"builder","token":"x"}`, `{"type":"send"}`, `{}`, `null`, `{"type":"send","target":"../../x","content":"\u0000"}`, `{"type":"health-check","staleAfterMs":-1}`, `{"type":"background-agent","payload":"x"}`, `{"type":"subscribe","topics":null}`, "\xff\xfe",
		`{"type":"send","target":"builder","content":"hi","messageId":"_x"}`, `{"type":"broadcast","content":"(ARCH #0): all"}`, `{"type":"message-ack"}`, `{"type":"message-ack","messageId":"nope"}`,
		`{"type":"delivery-check","requestId":"d","messageId":"x"}`, `{"type":"heartbeat","requestId":"h"}`, `{"type":"subscribe","topics":["journal"]}`, `{"type":"register","role":"user"}`, `{"type":"nope"}`, `[]`, `{"type":1}`,
		`{"type":"send","target":"architect","content":"x","messageId":"telegram-in-1"}`, `{"type":"send","target":"oracle","content":"(ARCH #9007199254740992): x"}`,
		`{"type":"query","op":"inbox","requestId":"q"}`, `{"type":"query","op":"get","payload":{"messageIds":["x"]}}`, `{"type":"query","op":"search","payload":{"query":"\"x"}}`,
		`{"type":"query","op":"timeline","payload":{"messageId":"x","before":-1}}`, `{"type":"query","op":"status","payload":{"role":"builder"}}`, `{"type":"query","op":"drop","payload":[]}`} {
		f.Add([]byte(s))
	}
	h := newFrameHarness(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		h.check(t, data, "")
		h.check(t, data, "architect")
	})
}

// protocolCodes are the codes an error frame or refused ACK may carry.
var protocolCodes = map[string]bool{}

func init() {
	for _, c := range []status.Code{status.CodeInvalidTarget, status.CodeOwnerBindingViolation, status.CodeRoleMismatch,
		status.CodeUnauthorized, status.CodeNotRegistered, status.CodeTooLarge, status.CodeRateLimited, status.CodeEmptyContent,
		status.CodeNoRoute, status.CodeTelegramUnconfigured, status.CodeJournalUnavailable, status.CodeUnknownType, status.CodeBadJSON,
		status.CodeBadRequest, status.CodeExpiredSession, status.CodeCapacityReached, status.CodeSlotUnavailable, status.CodeNotRunning,
		status.CodeNotFound, status.CodeInternal} {
		protocolCodes[string(c)] = true
	}
	for _, c := range []status.Code{status.CodeReservedID, status.CodeBadHeader, status.CodeDuplicateID} {
		protocolCodes[string(c)] = true
	}
}

// answers maps each client frame type to the frame type that answers it
// ("" when a success is not answered).
var answers = map[string]string{
	proto.TypeRegister:        proto.TypeRegistered,
	proto.TypeSend:            proto.TypeSendAck,
	proto.TypeBroadcast:       proto.TypeSendAck,
	proto.TypeHealthCheck:     proto.TypeHealthCheckResult,
	proto.TypeDeliveryCheck:   proto.TypeDeliveryCheckResult,
	proto.TypeHeartbeat:       proto.TypeHeartbeatAck,
	proto.TypeBackgroundAgent: proto.TypeResponse,
	proto.TypeSubscribe:       "",
	proto.TypeMessageAck:      "",
	proto.TypeQuery:           proto.TypeResponse,
}

type frameHarness struct {
	b      *Broker
	tokens map[string]string // role -> pane token
	n      int
}

func newFrameHarness(tb testing.TB) *frameHarness {
	ledger, err := journal.Open(context.Background(), filepath.Join(tb.TempDir(), "ledger.db"), journal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tokens := NewTokens(RandomToken())
	b := New(Config{Team: roles.Default(), Session: 1, SessionID: "app-session-1", Tokens: tokens}, Deps{Ledger: ledger})
	tb.Cleanup(func() {
		b.Close()
		ledger.Close()
	})
	return &frameHarness{b: b, tokens: map[string]string{"architect": tokens.Issue("architect")}}
}

// sent is the part of a server frame the invariants look at.
type sent struct {
	Type      string  `json:"type"`
	Code      string  `json:"code"`
	RequestID string  `json:"requestId"`
	OK        *bool   `json:"ok"`
	Error     *string `json:"error"`
	raw       []byte
}

// check runs one input on a fresh connection, registered first as role
// unless role is "".
func (h *frameHarness) check(t *testing.T, data []byte, role string) {
	s := h.open(t)
	defer s.close()
	if role != "" {
		reg, _ := json.Marshal(proto.Frame{Type: proto.TypeRegister, Role: role, Token: h.tokens[role]})
		if !s.c.readFrame(websocket.MessageText, reg) {
			t.Fatalf("register as %s ended the connection", role)
		}
		s.until(t, "registered", func(f sent) bool { return f.Type == proto.TypeRegistered })
	}
	var f proto.Frame
	var wantCode status.Code
	switch {
	case len(data) > proto.MaxMessageFrame:
		wantCode = status.CodeTooLarge
	case json.Unmarshal(data, &f) != nil, !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")):
		wantCode = status.CodeBadJSON // a frame is a JSON object; null is not one
	default:
		if _, known := answers[f.Type]; !known {
			wantCode = status.CodeUnknownType
		}
	}

	if !s.c.readFrame(websocket.MessageText, data) {
		if wantCode != "" || f.Type != proto.TypeRegister {
			t.Fatalf("%q ended the connection; only a register refused as unauthorized may", data)
		}
		s.until(t, "unauthorized error", func(f sent) bool { return f.Type == proto.TypeError && f.Code == string(status.CodeUnauthorized) })
		select {
		case <-s.sock.closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: unauthorized but the socket was not closed", data)
		}
		if s.sock.code != websocket.StatusPolicyViolation {
			t.Fatalf("%q: closed with %v, want policy violation", data, s.sock.code)
		}
		return
	}

	// The connection must still answer; everything sent before the answer
	// to this probe is the answer to the input (or unrelated and async).
	h.n++
	probe := "probe-" + strconv.Itoa(h.n)
	pf, _ := json.Marshal(proto.Frame{Type: proto.TypeHeartbeat, RequestID: probe})
	if !s.c.readFrame(websocket.MessageText, pf) {
		t.Fatalf("after %q a heartbeat ended the connection", data)
	}
	var got []sent
	probeRefused := false
	s.until(t, "heartbeat probe", func(fr sent) bool {
		if fr.Type == proto.TypeHeartbeatAck && fr.RequestID == probe {
			return true
		}
		if fr.Type == proto.TypeError && fr.Code == string(status.CodeNotRegistered) && fr.RequestID == probe {
			probeRefused = true
			return true
		}
		got = append(got, fr)
		return false
	})
	// A connection that has not registered learns nothing: it may be sent
	// registered, error frames, and a refusal in answer to
	// background-agent; its heartbeat is refused too.
	if role == "" {
		registered := false
		for _, fr := range got {
			switch {
			case fr.Type == proto.TypeRegistered:
				registered = true
			case fr.Type == proto.TypeError:
			case fr.Type == proto.TypeResponse && f.Type == proto.TypeBackgroundAgent && fr.OK != nil && !*fr.OK:
			default:
				t.Fatalf("%q: unregistered connection was sent %s", data, fr.raw)
			}
		}
		if !registered && !probeRefused {
			t.Fatalf("%q: unregistered connection's heartbeat was answered", data)
		}
	}
	answered := func(typ string) bool {
		for _, fr := range got {
			if fr.Type == typ {
				return true
			}
		}
		return false
	}
	errCode := func(code status.Code) bool {
		for _, fr := range got {
			if fr.Type == proto.TypeError && fr.Code == string(code) {
				return true
			}
		}
		return false
	}
	switch want := answers[f.Type]; {
	case wantCode != "":
		if !errCode(wantCode) {
			t.Fatalf("%q: no %s error frame; got %s", data, wantCode, dump(got))
		}
	case (f.Type == proto.TypeSend || f.Type == proto.TypeBroadcast) && role != "":
		// The ACK comes from the acker once the commit is done; a send
		// asking to wait for delivery may take that long.
		if f.WaitMs <= 0 && !answered(proto.TypeSendAck) {
			s.until(t, "send-ack", func(fr sent) bool { return fr.Type == proto.TypeSendAck })
		}
	case want != "" && !answered(want) && !answered(proto.TypeError):
		t.Fatalf("%q: neither %s nor an error frame; got %s", data, want, dump(got))
	}
}

func dump(fs []sent) string {
	var b bytes.Buffer
	for _, f := range fs {
		b.Write(f.raw)
		b.WriteByte(' ')
	}
	return b.String()
}

// session is one in-process connection: the test feeds frames to readFrame
// and reads what the writer sends from the fake socket.
type session struct {
	c    *conn
	sock *fakeSocket
	hold chan struct{}
	done chan struct{}
	once sync.Once
}

func (h *frameHarness) open(t *testing.T) *session {
	t.Helper()
	sock := newFakeSocket()
	c := h.b.newConn(sock)
	if !h.b.add(c) {
		t.Fatal("broker closed")
	}
	s := &session{c: c, sock: sock, hold: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c.serve(func() {
			select {
			case <-s.hold:
			case <-c.ctx.Done():
			}
		})
	}()
	s.until(t, "welcome", func(f sent) bool { return f.Type == proto.TypeWelcome })
	return s
}

func (s *session) close() {
	s.once.Do(func() { close(s.hold) })
	<-s.done
}

// until reads sent frames until match accepts one, checking each against
// the frame invariants. It fails the test if the socket closes or nothing
// matches within 10s.
func (s *session) until(t *testing.T, what string, match func(sent) bool) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		var raw []byte
		select {
		case raw = <-s.sock.out:
		case <-timeout.C:
			t.Fatalf("no %s within 10s", what)
		case <-s.sock.closed:
			select {
			case raw = <-s.sock.out:
			default:
				t.Fatalf("connection closed waiting for %s", what)
			}
		}
		var f sent
		if err := json.Unmarshal(raw, &f); err != nil || f.Type == "" {
			t.Fatalf("hub sent %q: not a JSON object with a type (%v)", raw, err)
		}
		f.raw = raw
		if f.Type == proto.TypeError && !protocolCodes[f.Code] {
			t.Fatalf("error frame without a protocol code: %s", raw)
		}
		if f.Type == proto.TypeSendAck && f.OK != nil && !*f.OK && (f.Error == nil || !protocolCodes[*f.Error]) {
			t.Fatalf("refused send-ack without a protocol code: %s", raw)
		}
		if match(f) {
			return
		}
	}
}

// fakeSocket stands in for a client's WebSocket: what the writer sends
// arrives on out; Read blocks until the connection ends.
type fakeSocket struct {
	out    chan []byte
	closed chan struct{}
	once   sync.Once
	code   websocket.StatusCode // set before closed is closed
}

func newFakeSocket() *fakeSocket {
	return &fakeSocket{out: make(chan []byte, 1024), closed: make(chan struct{}), code: -1}
}

func (s *fakeSocket) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	select {
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-s.closed:
		return 0, nil, net.ErrClosed
	}
}

func (s *fakeSocket) Write(ctx context.Context, _ websocket.MessageType, p []byte) error {
	select {
	case s.out <- bytes.Clone(p):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *fakeSocket) Close(code websocket.StatusCode, _ string) error {
	s.once.Do(func() {
		s.code = code
		close(s.closed)
	})
	return nil
}

func (s *fakeSocket) CloseNow() error { return s.Close(-1, "") }
