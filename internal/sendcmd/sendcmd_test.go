package sendcmd

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hm/broker/proto"
	"hm/internal/cmdline"
	"hm/internal/ground/layout"
	"hm/internal/ground/status"
	"hm/internal/ground/testutil"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMainIsHmSend: Main is the program hm-send on its own — its version
// line under its name, its help, a usage error, and with the hub down the
// offline target check and the trigger-file fallback — with nothing of
// internal/cli behind it.
func TestMainIsHmSend(t *testing.T) {
	t.Parallel()
	down := testutil.ClosedPort(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		file   string // the trigger file written, "" for none
	}{
		{name: "version", args: []string{"--version"}, code: cmdline.ExitOK, stdout: "hm-send "},
		{name: "help", args: []string{"--help"}, code: cmdline.ExitOK, stdout: "usage: " + Synopsis + "\n\n" + Summary + "\n"},
		{name: "no target", args: nil, code: cmdline.ExitUsage, stderr: "hm send: missing target"},
		{name: "typo while down", args: []string{"--port", down, "architekt", "hi"}, code: cmdline.ExitFailed,
			stderr: `hm-send: refused: invalid_target: "architekt" is not a target; did you mean architect?`},
		{name: "no fallback", args: []string{"--port", down, "--no-fallback", "architect", "hi"}, code: cmdline.ExitFailed,
			stderr: "no hub is running on 127.0.0.1:" + down},
		{name: "fallback", args: []string{"--port", down, "--message-id", "m-1", "architect", "-5", "degrees"}, code: cmdline.ExitOK,
			stderr: "fallback.triggered", file: "architect.m-1.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var out, errb bytes.Buffer
			env := cmdline.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(k string) string { return map[string]string{"SQUIDRUN_ROOT": root}[k] }}
			code := Main(tt.args, env)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("hm-send %q: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)",
					tt.args, code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
			files, _ := filepath.Glob(filepath.Join(layout.Layout{Root: root}.Triggers(), "*.txt"))
			if tt.file == "" {
				if len(files) != 0 {
					t.Fatalf("wrote %v", files)
				}
				return
			}
			if len(files) != 1 || filepath.Base(files[0]) != tt.file {
				t.Fatalf("trigger files %v, want %s", files, tt.file)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil || !strings.Contains(string(raw), "-5 degrees") {
				t.Fatalf("trigger file %q (%v): want the text -5 degrees", raw, err)
			}
		})
	}
}

// scriptedHub is a WebSocket server on a loopback port speaking the hub's
// side of one hm-send connection by script: it reads the register and the
// frame after it without writing anything before, not even its welcome
// (the real hub greets first: hm-send must not wait for that), then greets
// and answers both with answer. It stands in for the hub where the order
// of frames on the socket is what a test is about. It returns the port.
func scriptedHub(t *testing.T, answer func(register, send proto.Frame) []any) string {
	t.Helper()
	srv := testutil.WebSocketServer(t, func(ctx context.Context, ws *websocket.Conn) {
		var frames [2]proto.Frame
		for i := range frames {
			if err := wsjson.Read(ctx, ws, &frames[i]); err != nil {
				t.Errorf("read frame %d: %v", i+1, err)
				return
			}
		}
		welcome := proto.Welcome{Type: proto.TypeWelcome, ClientID: 1, Protocol: proto.Protocol}
		for _, a := range append([]any{welcome}, answer(frames[0], frames[1])...) {
			if err := wsjson.Write(ctx, ws, a); err != nil {
				t.Errorf("answer: %v", err)
				return
			}
		}
		_, _, _ = ws.Read(ctx) // until hm-send closes
	})
	return strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
}

// TestSendNotBehindRegistered: hm-send writes its send right behind its
// register, without waiting a round trip for `registered`, and both as
// soon as the connection is upgraded, without waiting for the hub's
// welcome (#36): the hub reads a connection's frames in order. The
// scripted hub writes nothing, its welcome included, until it has read
// both frames; before these changes hm-send waited for `registered` (and
// then for the welcome) first and, with --no-fallback, gave up (exit 1). A register the hub refuses is what hm-send reports, not the
// not_registered of the send behind it.
func TestSendNotBehindRegistered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer func(register, send proto.Frame) []any
		code   int
		stdout string
		stderr string
	}{
		{name: "registered, then the ACK", answer: func(reg, send proto.Frame) []any {
			if reg.Type != proto.TypeRegister || reg.Role != "architect" || send.Type != proto.TypeSend || send.Target != "builder" || send.Content != "hi" {
				t.Errorf("frames %+v, %+v: want register as architect, then the send", reg, send)
			}
			ack := proto.Ack{Type: proto.TypeSendAck, RequestID: send.RequestID, MessageID: send.MessageID, OK: true, Accepted: true, Seq: 7}
			ack.SetStage(status.AcceptedUnverified)
			return []any{proto.Registered{Type: proto.TypeRegistered, Role: reg.Role, ClientID: 1}, ack}
		}, code: cmdline.ExitOK, stdout: "accepted for builder (accepted.unverified, seq 7): "},
		{name: "register refused", answer: func(_, send proto.Frame) []any {
			return []any{
				proto.Frame{Type: proto.TypeError, Code: status.CodeUnauthorized, Message: "token is not valid for role architect"},
				proto.Frame{Type: proto.TypeError, Code: status.CodeNotRegistered, Message: "register before sending send frames", RequestID: send.RequestID},
			}
		}, code: cmdline.ExitFailed, stderr: "hm-send: refused: unauthorized: token is not valid for role architect\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			port := scriptedHub(t, tt.answer)
			var out, errb bytes.Buffer
			env := cmdline.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			code := Run(t.Context(), env, []string{"--root", t.TempDir(), "--port", port, "--role", "architect",
				"--timeout", "10s", "--no-fallback", "builder", "hi"})
			if code != tt.code || !strings.HasPrefix(out.String(), tt.stdout) || errb.String() != tt.stderr {
				t.Fatalf("exit %d (want %d)\nstdout %q (want it to start %q)\nstderr %q (want %q)", code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
}

// TestAckLine: hm-send's line is SPEC §12's, "delivered to" for a
// delivered.* stage and "accepted for" otherwise, with the protocol status
// and seq, then the stage in plain words (issue 34).
func TestAckLine(t *testing.T) {
	for _, tc := range []struct {
		stage status.Stage
		want  string
	}{
		{status.AcceptedUnverified, "accepted for builder (accepted.unverified, seq 3): queued; "},
		{status.AcceptedQueuedRemote, "accepted for builder (accepted.queued_remote, seq 3): "},
		{status.DeliveredWebSocket, "delivered to builder (delivered.websocket, seq 3): received by its listener"},
		{status.DeliveredVerified, "delivered to builder (delivered.verified, seq 3): seen by the agent"},
	} {
		ack := proto.Ack{OK: true, Seq: 3}
		ack.SetStage(tc.stage)
		if got := ackLine("builder", ack); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to start %q", tc.stage, got, tc.want)
		}
	}
}
