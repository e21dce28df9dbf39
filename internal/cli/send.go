package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"hm/internal/status"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/layout"
	"hm/internal/msgid"
	"hm/roles"
	"hm/triggers"
)

const sendSynopsis = "hm-send <target> <message...> [--role R] [--priority P] [--file F | --stdin] [--timeout D] [--wait D] [--no-fallback] [--json]"

// clientConfig is what every client command discovers: root, port, token, role.
type clientConfig struct {
	layout layout.Layout
	port   int
	token  string
	role   string
}

func (c clientConfig) url() string { return "ws://127.0.0.1:" + strconv.Itoa(c.port) + "/" }

// discover applies SPEC §12: port from --port, $HM_PORT/$HM_SEND_PORT,
// runtime/hub.json, else 9900; role from --role, $SQUIDRUN_ROLE, else user;
// token from $HM_TOKEN, else runtime/hub-token.
func discover(env Env, root string, port int, role string) (clientConfig, error) {
	lay, err := findRoot(env, root)
	if err != nil {
		return clientConfig{}, err
	}
	c := clientConfig{layout: lay, port: port, role: role}
	if c.port <= 0 {
		for _, k := range []string{"HM_PORT", "HM_SEND_PORT"} {
			if v := env.Getenv(k); v != "" {
				p, err := strconv.Atoi(v)
				if err != nil || p <= 0 || p > 65535 {
					return c, fmt.Errorf("$%s=%q is not a port", k, v)
				}
				c.port = p
				break
			}
		}
	}
	if c.port <= 0 {
		if info, err := lay.ReadHubInfo(); err == nil && info.Port > 0 {
			c.port = info.Port
		}
	}
	if c.port <= 0 {
		c.port = 9900
	}
	if c.role == "" {
		c.role = env.Getenv("SQUIDRUN_ROLE")
	}
	if c.role == "" {
		c.role = roles.RoleUser
	}
	c.role = strings.ToLower(c.role)
	c.token = env.Getenv("HM_TOKEN")
	if c.token == "" {
		c.token, _ = lay.ReadToken()
	}
	return c, nil
}

// dialHub finds the hub --root and --port name and connects to it as role
// within ctx (registered, not listening). On failure it prints
// "<cmd>: …" and returns nil.
func dialHub(ctx context.Context, env Env, cmd, root string, port int, role string) *client.Client {
	cfg, err := discover(env, root, port, role)
	if err != nil {
		fmt.Fprintln(env.Stderr, cmd+":", err)
		return nil
	}
	cl, err := cfg.connect(ctx, false)
	if err != nil {
		fmt.Fprintln(env.Stderr, cmd+":", err)
		return nil
	}
	return cl
}

// dial connects to the hub with token (not registered); a hub that is not
// there is a noHubError.
func (c clientConfig) dial(ctx context.Context, token string) (*client.Client, error) {
	cl, err := client.DialToken(ctx, c.url(), token)
	if err != nil {
		return nil, hubError(c.port, c.layout.Root, err)
	}
	return cl, nil
}

// connect dials and registers within timeout.
func (c clientConfig) connect(ctx context.Context, listen bool) (*client.Client, error) {
	cl, err := c.dial(ctx, c.token)
	if err != nil {
		return nil, err
	}
	if _, err := cl.Register(ctx, c.role, c.token, listen); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func runSend(ctx context.Context, env Env, args []string) int {
	fs := newFlags("send", env)
	root := rootFlag(fs)
	port := portFlag(fs)
	role := fs.String("role", "", "sender role (default $SQUIDRUN_ROLE, else user)")
	priority := fs.String("priority", status.PriorityNormal, "priority: "+strings.Join(status.Priorities, ", "))
	file := fs.String("file", "", "read the message from this file")
	stdin := fs.Bool("stdin", false, "read the message from standard input")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the hub's ACK before falling back")
	wait := fs.Duration("wait", 0, "ask the hub to wait up to this long for delivery (max 30s)")
	noFallback := fs.Bool("no-fallback", false, "fail instead of writing a trigger file")
	asJSON := jsonFlag(fs, "the ACK")
	messageID := fs.String("message-id", "", "message id (default: generated)")
	pos, err := parseMessageArgs(fs, args, 1)
	if err != nil {
		return usageError(env, fs, sendSynopsis, err)
	}
	if len(pos) < 1 {
		return usageError(env, fs, sendSynopsis, errors.New("missing target"))
	}
	target := pos[0]
	content := strings.Join(pos[1:], " ")
	switch {
	case *file != "" && *stdin:
		return usageError(env, fs, sendSynopsis, errors.New("--file and --stdin exclude each other"))
	case (*file != "" || *stdin) && content != "":
		return usageError(env, fs, sendSynopsis, errors.New("give the message as words, --file or --stdin, not several"))
	case *file != "":
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintln(env.Stderr, "hm-send:", err)
			return ExitFailed
		}
		content, err = readMessage(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(env.Stderr, "hm-send: %s: %v\n", *file, err)
			return ExitFailed
		}
	case *stdin:
		if content, err = readMessage(env.Stdin); err != nil {
			fmt.Fprintln(env.Stderr, "hm-send: stdin:", err)
			return ExitFailed
		}
	}
	if *file != "" || *stdin {
		content = strings.TrimRight(content, "\n")
	}
	if strings.TrimSpace(content) == "" {
		return usageError(env, fs, sendSynopsis, errors.New("missing message"))
	}
	if *wait < 0 || *wait > 30*time.Second {
		return usageError(env, fs, sendSynopsis, errors.New("--wait must be between 0 and 30s"))
	}
	if *timeout <= 0 {
		return usageError(env, fs, sendSynopsis, errors.New("--timeout must be positive"))
	}
	cfg, err := discover(env, *root, *port, *role)
	if err != nil {
		fmt.Fprintln(env.Stderr, "hm-send:", err)
		return ExitFailed
	}
	id := *messageID
	if id == "" {
		id = msgid.New(time.Now())
	}
	s := sender{env: env, cfg: cfg, target: target, content: content, id: id, json: *asJSON, noFallback: *noFallback}
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
	env        Env
	cfg        clientConfig
	target     string
	content    string
	id         string
	json       bool
	noFallback bool
}

func (s sender) run(ctx context.Context, priority string, timeout, wait time.Duration) int {
	dialCtx, cancel := context.WithTimeout(ctx, time.Second)
	cl, err := s.cfg.dial(dialCtx, s.cfg.token)
	cancel()
	if err != nil {
		return s.fallback(err.Error())
	}
	defer cl.Close()
	ackCtx, cancel := context.WithTimeout(ctx, timeout+wait)
	defer cancel()
	if _, err := cl.Register(ackCtx, s.cfg.role, s.cfg.token, false); err != nil {
		var pe *proto.Error
		if errors.As(err, &pe) {
			return s.refused(string(pe.Code), pe.Message)
		}
		return s.fallback(fmt.Sprintf("no answer to register within %s", timeout))
	}
	ack, raw, err := cl.Send(ackCtx, proto.Frame{Type: proto.TypeSend, Target: s.target, Content: s.content, MessageID: s.id, Priority: priority, WaitMs: wait.Milliseconds()})
	if err != nil {
		var pe *proto.Error
		if errors.As(err, &pe) {
			return s.refused(string(pe.Code), pe.Message)
		}
		return s.fallback(fmt.Sprintf("no ACK within %s", timeout+wait))
	}
	if s.json {
		fmt.Fprintln(s.env.Stdout, string(raw))
	}
	if !ack.OK {
		return s.refused(ack.Status, ack.Reason) // on stderr, --json or not
	}
	if !s.json {
		fmt.Fprintf(s.env.Stdout, "%s (seq %d): %s\n", s.target, ack.Seq, ack.Stage().Human())
	}
	return ExitOK
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
	return ExitFailed
}

// fallback writes the message to the trigger directory (SPEC §7), once
// the target is known to the team of settings.json (or the default team):
// the hub would refuse anything else, and a typo is better told now than
// found in triggers/rejected/ later.
func (s sender) fallback(reason string) int {
	team, err := roles.Load(s.cfg.layout.Settings())
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
		return ExitFailed
	}
	content := s.content
	if _, _, ok := roles.ParseHeader(content); !ok && s.cfg.role != roles.RoleUser {
		// The trigger file carries the sender in its header. #0 asks the
		// hub to number it (the hub owns sequence numbers).
		content = roles.Header{Role: team.HeaderFor(s.cfg.role), Seq: 0}.String() + content
	}
	if err := s.cfg.layout.EnsureTriggers(); err != nil {
		fmt.Fprintln(s.env.Stderr, "hm-send: fallback:", err)
		return ExitFailed
	}
	// Signed with the token hm-send holds ($HM_TOKEN, else the operator
	// token) so the hub knows the sender; without one the hub treats the
	// file as unverified (SPEC §7).
	write := triggers.Write
	if s.cfg.token != "" {
		write = func(dir, target, id, content string) (string, error) {
			return triggers.WriteSigned(dir, target, id, content, s.cfg.role, s.cfg.token)
		}
	}
	path, err := write(s.cfg.layout.Triggers(), strings.ToLower(s.target), s.id, content)
	if err != nil {
		fmt.Fprintf(s.env.Stderr, "hm-send: refused: %s: fallback could not write a trigger file: %v\n", status.CodeInvalidTarget, err)
		return ExitFailed
	}
	fmt.Fprintf(s.env.Stderr, "fallback.triggered: %s; wrote %s\n", reason, path)
	if s.json {
		data, _ := json.Marshal(map[string]any{"type": proto.TypeSendAck, "messageId": s.id, "ok": true, "accepted": true, "verified": false,
			"status": status.FallbackTriggered, "path": path, "reason": reason})
		fmt.Fprintln(s.env.Stdout, string(data))
	}
	return ExitOK
}
