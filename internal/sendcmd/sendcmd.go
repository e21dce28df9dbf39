// Package sendcmd is hm-send, the same as `hm send`: it parses the
// arguments (SPEC §12: flags around the message, "-5" is text), sends one
// message over the hub's WebSocket and prints the ACK, and when the hub
// cannot be reached checks the target against settings.json offline and
// writes a signed trigger file instead (SPEC §7). It links none of the hub
// (no SQLite, NATS, Telegram or MCP), so the program panes run for every
// message starts quickly; internal/layers holds it to that.
package sendcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/cmdline"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/roles"
	"hm/triggers"
)

// Synopsis is the command's usage line; Summary says what it does (hm's
// command table lists `hm send` with it).
const (
	Synopsis = "hm-send <target> <message...> [--role R] [--priority P] [--file F | --stdin] [--timeout D] [--wait D] [--no-fallback] [--json]"
	Summary  = "send a message (same as hm-send)"
)

// Main runs the program hm-send with args (its arguments, without the
// program name) and returns the exit code; a sole --version prints its
// version under its own name.
func Main(args []string, env cmdline.Env) int {
	if cmdline.AnswerVersion(env, "hm-send", args) {
		return cmdline.ExitOK
	}
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, env, args)
}

// Run runs `hm send args...` within ctx and returns the exit code.
func Run(ctx context.Context, env cmdline.Env, args []string) int {
	fs := cmdline.NewFlags("send")
	root := cmdline.RootFlag(fs)
	port := cmdline.PortFlag(fs)
	role := fs.String("role", "", "sender role (default $SQUIDRUN_ROLE, else user)")
	priority := fs.String("priority", status.PriorityNormal, "priority: "+strings.Join(status.Priorities, ", "))
	file := fs.String("file", "", "read the message from this file")
	stdin := fs.Bool("stdin", false, "read the message from standard input")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the hub's ACK before falling back")
	wait := fs.Duration("wait", 0, "ask the hub to wait up to this long for delivery (max 30s)")
	noFallback := fs.Bool("no-fallback", false, "fail instead of writing a trigger file")
	asJSON := cmdline.JSONFlag(fs, "the ACK")
	messageID := fs.String("message-id", "", "message id (default: generated)")
	pos, err := cmdline.ParseMessageArgs(fs, args, 1)
	if err != nil {
		return cmdline.UsageError(env, fs, Synopsis, Summary, err)
	}
	if len(pos) < 1 {
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("missing target"))
	}
	target := pos[0]
	content := strings.Join(pos[1:], " ")
	switch {
	case *file != "" && *stdin:
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("--file and --stdin exclude each other"))
	case (*file != "" || *stdin) && content != "":
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("give the message as words, --file or --stdin, not several"))
	case *file != "":
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintln(env.Stderr, "hm-send:", err)
			return cmdline.ExitFailed
		}
		content, err = readMessage(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(env.Stderr, "hm-send: %s: %v\n", *file, err)
			return cmdline.ExitFailed
		}
	case *stdin:
		if content, err = readMessage(env.Stdin); err != nil {
			fmt.Fprintln(env.Stderr, "hm-send: stdin:", err)
			return cmdline.ExitFailed
		}
	}
	if *file != "" || *stdin {
		content = strings.TrimRight(content, "\n")
	}
	if strings.TrimSpace(content) == "" {
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("missing message"))
	}
	if *wait < 0 || *wait > 30*time.Second {
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("--wait must be between 0 and 30s"))
	}
	if *timeout <= 0 {
		return cmdline.UsageError(env, fs, Synopsis, Summary, errors.New("--timeout must be positive"))
	}
	hub, err := cmdline.Discover(env, *root, *port, *role)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm-send:", err)
		return cmdline.ExitFailed
	}
	id := *messageID
	if id == "" {
		id = msgid.New(time.Now())
	}
	s := sender{env: env, hub: hub, target: target, content: content, id: id, json: *asJSON, noFallback: *noFallback}
	return s.run(ctx, *priority, *timeout, *wait)
}

// readMessage reads a message body from r, at most the protocol's message
// limit: a longer input (say /dev/zero) is refused after reading one byte
// more than the limit, never read whole.
func readMessage(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, proto.MaxMessageFrame+1))
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	if len(data) > proto.MaxMessageFrame {
		return "", fmt.Errorf("refused: %s: the message is over the %d KiB limit", status.CodeTooLarge, proto.MaxMessageFrame>>10)
	}
	return string(data), nil
}

type sender struct {
	env        cmdline.Env
	hub        cmdline.Hub
	target     string
	content    string
	id         string
	json       bool
	noFallback bool
}

func (s sender) run(ctx context.Context, priority string, timeout, wait time.Duration) int {
	dialCtx, cancel := context.WithTimeout(ctx, time.Second)
	cl, err := s.hub.DialPipelined(dialCtx, s.hub.Token)
	cancel()
	if err != nil {
		return s.fallback(err.Error())
	}
	defer cl.Close()
	ackCtx, cancel := context.WithTimeout(ctx, timeout+wait)
	defer cancel()
	ack, raw, err := s.exchange(ackCtx, cl, proto.Frame{Type: proto.TypeSend, Target: s.target, Content: s.content, MessageID: s.id, Priority: priority, WaitMs: wait.Milliseconds()}, timeout, wait)
	if pe, ok := errors.AsType[*proto.Error](err); ok {
		return s.refused(string(pe.Code), pe.Message)
	}
	if err != nil {
		return s.fallback(err.Error())
	}
	if s.json {
		fmt.Fprintln(s.env.Stdout, string(raw))
	}
	if !ack.OK {
		return s.refused(ack.Status, ack.Reason) // on stderr, --json or not
	}
	if !s.json {
		fmt.Fprintln(s.env.Stdout, ackLine(s.target, ack))
	}
	return cmdline.ExitOK
}

// ackLine is hm-send's one line for an ACK: SPEC §12's "delivered to
// <target> (<status>, seq N)" or "accepted for <target> (<status>, seq N)",
// then the stage in plain words and what would verify it (issue 34).
func ackLine(target string, ack proto.Ack) string {
	verb := "accepted for"
	if ack.Stage().Delivered() {
		verb = "delivered to"
	}
	return fmt.Sprintf("%s %s (%s, seq %d): %s", verb, target, ack.Status, ack.Seq, ack.Stage().Human())
}

// exchange registers and sends f on cl and returns the hub's ACK, or why
// there is none: the hub's refusal (a *proto.Error), or what it did not
// answer in time. The send is written right behind the register, not a
// round trip later: the hub reads a connection's frames in order, so it
// is registered when it reads the send, and a refused register is
// answered first (the send after it only with not_registered, or not at
// all when the hub hangs up).
func (s sender) exchange(ctx context.Context, cl *client.Client, f proto.Frame, timeout, wait time.Duration) (proto.Ack, []byte, error) {
	noRegistered := fmt.Errorf("no answer to register within %s", timeout)
	if err := cl.WriteRegister(ctx, s.hub.Role, s.hub.Token, false); err != nil {
		return proto.Ack{}, nil, noRegistered
	}
	f, sendErr := cl.WriteSend(ctx, f)
	if _, err := cl.AwaitRegistered(ctx, s.hub.Role); err != nil {
		if pe, ok := errors.AsType[*proto.Error](err); ok {
			return proto.Ack{}, nil, pe
		}
		return proto.Ack{}, nil, noRegistered
	}
	ack, raw, err := proto.Ack{}, []byte(nil), sendErr
	if err == nil {
		ack, raw, err = cl.AwaitAck(ctx, f)
	}
	if _, ok := errors.AsType[*proto.Error](err); err != nil && !ok {
		err = fmt.Errorf("no ACK within %s", timeout+wait)
	}
	return ack, raw, err
}

// offlineTarget checks target as the hub would (roles.Team.Resolve, the
// hub's one rule, with its suggestion) and returns the refusal the hub
// would send: its code and reason.
func offlineTarget(team *roles.Team, target string) (code, reason string, refused bool) {
	_, err := team.Resolve(target)
	if err == nil {
		return "", "", false
	}
	if ute, ok := errors.AsType[*roles.UnknownTargetError](err); ok {
		return string(status.CodeInvalidTarget), ute.Reason(), true
	}
	return string(status.CodeInvalidTarget), err.Error(), true
}

func (s sender) refused(code, reason string) int {
	if reason != "" {
		fmt.Fprintf(s.env.Stderr, "hm-send: refused: %s: %s\n", code, reason)
	} else {
		fmt.Fprintf(s.env.Stderr, "hm-send: refused: %s\n", code)
	}
	return cmdline.ExitFailed
}

// fallback writes the message to the trigger directory (SPEC §7), once
// the target is known to the team of settings.json (or the default team):
// the hub would refuse anything else, and a typo is better told now than
// found in triggers/rejected/ later.
func (s sender) fallback(reason string) int {
	team, err := roles.Load(s.hub.Layout.Settings())
	if err != nil {
		// The hub cannot start with these settings either; the file waits
		// for them to be fixed, and the hub checks the target then.
		fmt.Fprintf(s.env.Stderr, "hm-send: the target is not checked: %v\n", err)
		team = roles.Default()
	} else if code, msg, bad := offlineTarget(team, s.target); bad {
		return s.refused(code, msg)
	}
	if s.noFallback {
		fmt.Fprintf(s.env.Stderr, "hm-send: %s (--no-fallback)\n", reason)
		return cmdline.ExitFailed
	}
	content := s.content
	if _, _, ok := roles.ParseHeader(content); !ok && s.hub.Role != roles.RoleUser {
		// The trigger file carries the sender in its header. #0 asks the
		// hub to number it (the hub owns sequence numbers).
		content = roles.Header{Role: team.HeaderFor(s.hub.Role), Seq: 0}.String() + content
	}
	if err := s.hub.Layout.EnsureTriggers(); err != nil {
		fmt.Fprintln(s.env.Stderr, "hm-send: fallback:", err)
		return cmdline.ExitFailed
	}
	// Signed with the token hm-send holds ($HM_TOKEN, else the operator
	// token) so the hub knows the sender; without one the hub treats the
	// file as unverified (SPEC §7).
	write := triggers.Write
	if s.hub.Token != "" {
		write = func(dir, target, id, content string) (string, error) {
			return triggers.WriteSigned(dir, target, id, content, s.hub.Role, s.hub.Token)
		}
	}
	path, err := write(s.hub.Layout.Triggers(), strings.ToLower(s.target), s.id, content)
	if err != nil {
		fmt.Fprintf(s.env.Stderr, "hm-send: refused: %s: fallback could not write a trigger file: %v\n", status.CodeInvalidTarget, err)
		return cmdline.ExitFailed
	}
	fmt.Fprintf(s.env.Stderr, "fallback.triggered: %s; wrote %s\n", reason, path)
	if s.json {
		data, _ := json.Marshal(map[string]any{"type": proto.TypeSendAck, "messageId": s.id, "ok": true, "accepted": true, "verified": false,
			"status": status.FallbackTriggered, "path": path, "reason": reason})
		fmt.Fprintln(s.env.Stdout, string(data))
	}
	return cmdline.ExitOK
}
