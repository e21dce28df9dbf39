package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// MinDuplicateWindow is the shortest Nats-Msg-Id dedupe window hm accepts
// on the team's stream: a message republished from a hub's outbox within
// it is stored once.
const MinDuplicateWindow = 10 * time.Minute

// Config configures a Client. URL and Team are required.
type Config struct {
	URL string
	// CredsFile is a NATS user credentials file (JWT and nkey seed). With
	// it, the hub's identity is the user's public nkey and its presence is
	// signed with that key.
	CredsFile string
	Team      string
	// Hub names this hub without CredsFile (default: DefaultHub, the host
	// name and a short hash of Root).
	Hub string
	// Root is the hm root this hub serves; with the host name it makes the
	// hub's Origin, which its presence carries so that a second hub using
	// the same name is told apart (ErrDuplicateHub).
	Root   string
	Logger *slog.Logger
	// DuplicateWindow is the stream's dedupe window when hm creates it
	// (default and minimum MinDuplicateWindow).
	DuplicateWindow time.Duration
	// Replicas of the stream when hm creates it (default 1; a 3-node
	// cluster wants 3, docs/federation.md).
	Replicas int
	// AckWait is the consumers' AckWait (default 5m): longer than a pane
	// takes to type a message; InProgress extends it while waiting.
	AckWait time.Duration
	// PublishTimeout bounds the wait for a PubAck (default 5s).
	PublishTimeout time.Duration
	// ReconnectWait is the pause between reconnection attempts (default 1s).
	ReconnectWait time.Duration
}

// Client is a connection to the team's NATS servers. Create with Connect,
// stop with Close.
type Client struct {
	cfg  Config
	log  *slog.Logger
	subj Subjects
	nc   *nats.Conn
	js   jetstream.JetStream
	hub  string
	// origin is Origin(host name, Config.Root).
	origin string
	kp     nkeys.KeyPair // nil without credentials
	// up is signalled (never blocking) on every connection and
	// reconnection: the outbox flushes then.
	up chan struct{}
}

// Connect dials cfg.URL. It does not wait for the server: when it cannot
// be reached, the client keeps trying in the background and Connected is
// false meanwhile (messages then wait in the hub's ledger).
func Connect(cfg Config) (*Client, error) {
	subj, err := NewSubjects(cfg.Team)
	if err != nil {
		return nil, err
	}
	if cfg.URL == "" {
		return nil, errors.New("federation: no NATS URL")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DuplicateWindow < MinDuplicateWindow {
		cfg.DuplicateWindow = MinDuplicateWindow
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 5 * time.Minute
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = 5 * time.Second
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = time.Second
	}
	host, _ := os.Hostname()
	c := &Client{cfg: cfg, log: cfg.Logger, subj: subj, up: make(chan struct{}, 1), origin: Origin(host, cfg.Root)}
	opts := []nats.Option{
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(cfg.ReconnectWait),
		nats.ConnectHandler(func(*nats.Conn) { c.signalUp(); c.log.Info("nats connected") }),
		nats.ReconnectHandler(func(*nats.Conn) { c.signalUp(); c.log.Info("nats reconnected") }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { c.log.Warn("nats disconnected", "err", err) }),
		// Nothing is buffered while disconnected: a publish then fails at
		// once and the message waits in the ledger instead.
		nats.ReconnectBufSize(-1),
	}
	if cfg.CredsFile != "" {
		data, err := os.ReadFile(cfg.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("federation: read credentials: %w", err)
		}
		kp, err := nkeys.ParseDecoratedUserNKey(data)
		if err != nil {
			return nil, fmt.Errorf("federation: credentials %s: %w", cfg.CredsFile, err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("federation: credentials %s: %w", cfg.CredsFile, err)
		}
		c.kp, c.hub = kp, pub
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	} else {
		c.hub = cfg.Hub
		if c.hub == "" {
			c.hub = DefaultHub(host, c.origin)
		}
		if !validToken(c.hub) {
			return nil, fmt.Errorf("federation: hub name %q: 1-64 ASCII letters, digits, '-' or '_'", c.hub)
		}
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("federation: connect %s: %w", cfg.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("federation: jetstream: %w", err)
	}
	c.nc, c.js = nc, js
	if nc.IsConnected() {
		c.signalUp()
	}
	return c, nil
}

// sanitize keeps the token characters of a host name ('.' becomes '-').
func sanitize(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 64; i++ {
		c := s[i]
		switch {
		case validToken(string(c)):
			out = append(out, c)
		case c == '.':
			out = append(out, '-')
		}
	}
	if len(out) == 0 {
		return "hub"
	}
	return string(out)
}

func (c *Client) signalUp() {
	select {
	case c.up <- struct{}{}:
	default:
	}
}

// Up is signalled on every (re)connection.
func (c *Client) Up() <-chan struct{} { return c.up }

// Hub is this hub's identity: the user's public nkey with credentials,
// else its name.
func (c *Client) Hub() string { return c.hub }

// Signing reports whether this hub signs its presence (has credentials);
// it then requires peers to sign theirs.
func (c *Client) Signing() bool { return c.kp != nil }

// Subjects returns the team's subjects.
func (c *Client) Subjects() Subjects { return c.subj }

// Connected reports whether the connection is up now.
func (c *Client) Connected() bool { return c.nc.IsConnected() }

// Close ends the connection (and every subscription and consumer on it).
func (c *Client) Close() {
	c.nc.Close()
	if c.kp != nil {
		c.kp.Wipe()
	}
}

// ErrDisconnected is returned by Publish while NATS cannot be reached.
var ErrDisconnected = errors.New("federation: not connected to NATS")

// EnsureStream creates the team's stream if it does not exist. An existing
// stream (made by an operator, e.g. with R3) is kept; a dedupe window
// shorter than MinDuplicateWindow or missing per-message TTLs is an error.
func (c *Client) EnsureStream(ctx context.Context) error {
	name := c.subj.Stream()
	s, err := c.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = c.js.CreateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{c.subj.All()}, Storage: jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy, Duplicates: c.cfg.DuplicateWindow, Replicas: c.cfg.Replicas,
			MaxAge: 30 * 24 * time.Hour, AllowMsgTTL: true,
		})
		if err == nil || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil
		}
		return fmt.Errorf("federation: create stream %s: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("federation: stream %s: %w", name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Duplicates < MinDuplicateWindow {
		return fmt.Errorf("federation: stream %s has a duplicate window of %v; hm needs at least %v", name, cfg.Duplicates, MinDuplicateWindow)
	}
	if !cfg.AllowMsgTTL {
		return fmt.Errorf("federation: stream %s does not allow per-message TTLs (allow_msg_ttl), which presence needs", name)
	}
	return nil
}

// Publish stores e on hm.<team>.to.<e.Target> with Nats-Msg-Id e.MessageID
// and returns once the PubAck says it is stored (a duplicate within the
// window is acknowledged too, and stored once). While disconnected it
// fails at once with ErrDisconnected.
func (c *Client) Publish(ctx context.Context, e Envelope) error {
	if !c.nc.IsConnected() {
		return ErrDisconnected
	}
	e.Hub, e.Sig = c.hub, ""
	if c.kp != nil {
		if err := e.Sign(c.kp); err != nil {
			return err
		}
	}
	data, err := e.Marshal()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.PublishTimeout)
	defer cancel()
	if _, err := c.js.Publish(ctx, c.subj.To(e.Target), data, jetstream.WithMsgID(e.MessageID)); err != nil {
		return fmt.Errorf("federation: publish %s: %w", e.MessageID, err)
	}
	return nil
}

// PublishPresence publishes this hub's roles, signed when it has
// credentials, with a per-message TTL of ttl so the stream forgets it.
func (c *Client) PublishPresence(roles []RoleState, ttl time.Duration) error {
	if !c.nc.IsConnected() {
		return ErrDisconnected
	}
	p := Presence{Hub: c.hub, Origin: c.origin, Roles: roles, AtMs: time.Now().UnixMilli(), TTLMs: ttl.Milliseconds()}
	if c.kp != nil {
		if err := p.Sign(c.kp); err != nil {
			return err
		}
	}
	data, err := p.marshal()
	if err != nil {
		return err
	}
	msg := nats.NewMsg(c.subj.Presence(c.hub))
	msg.Data = data
	secs := int64(ttl / time.Second)
	if secs < 1 {
		secs = 1
	}
	msg.Header.Set(jetstream.MsgTTLHeader, fmt.Sprintf("%ds", secs))
	return c.nc.PublishMsg(msg)
}

// WatchPresence calls fn with every other hub's presence (or the reason it
// could not be read) until stop; fn runs on the connection's dispatcher. A
// presence under this hub's own name from another origin is another hub
// using the name: fn gets it with an error wrapping ErrDuplicateHub.
func (c *Client) WatchPresence(fn func(Presence, error)) (stop func(), err error) {
	sub, err := c.nc.Subscribe(c.subj.PresenceAll(), func(m *nats.Msg) {
		hub := c.subj.hubOfPresence(m.Subject)
		p, err := ParsePresence(m.Data, hub)
		if hub == c.hub {
			if err == nil {
				err = c.sameName(p)
			}
			if err == nil {
				return // this hub's own
			}
		}
		fn(p, err)
	})
	if err != nil {
		return nil, fmt.Errorf("federation: watch presence: %w", err)
	}
	// A round trip, so that the server has the subscription before this
	// returns: presence published right after is seen. Disconnected, the
	// subscription still starts with the reconnection.
	_ = c.nc.FlushTimeout(2 * time.Second)
	return func() { _ = sub.Unsubscribe() }, nil
}

// sameName checks a presence published under this hub's name: nil when it
// is this hub's own (its origin), else an error wrapping ErrDuplicateHub.
func (c *Client) sameName(p Presence) error {
	if p.Origin == c.origin {
		return nil
	}
	return fmt.Errorf("%w: hub %s on team %s is also the name of another hub (origin %q, this hub's %s; presence made %s); give one of them another name (hm up --hub NAME, or settings.json nats.hub)",
		ErrDuplicateHub, c.hub, c.cfg.Team, p.Origin, c.origin, time.UnixMilli(p.AtMs).UTC().Format(time.RFC3339))
}

// CheckName refuses this hub's name when another live hub of the team uses
// it: the last presence stored under the name is still live and comes from
// another origin (ErrDuplicateHub). It says nothing when NATS cannot be
// reached or holds no such presence; WatchPresence reports a duplicate that
// shows up later.
func (c *Client) CheckName(ctx context.Context) error {
	if !c.nc.IsConnected() {
		return nil
	}
	s, err := c.js.Stream(ctx, c.subj.Stream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("federation: check hub name: stream %s: %w", c.subj.Stream(), err)
	}
	m, err := s.GetLastMsgForSubject(ctx, c.subj.Presence(c.hub))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("federation: check hub name: %w", err)
	}
	p, err := ParsePresence(m.Data, c.hub)
	if err != nil || time.Now().After(time.UnixMilli(p.AtMs+p.TTLMs)) {
		return nil // unreadable or expired: no live hub behind it
	}
	return c.sameName(p)
}
