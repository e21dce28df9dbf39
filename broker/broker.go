// Package broker is hm's message router and WebSocket server: it
// authenticates clients, applies the role-header and sequence rules, commits
// every message to the ledger before acknowledging it, and routes it to
// listeners, hosted panes or the Telegram relay.
package broker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/paneevents"
	"hm/internal/ground/periodic"
	"hm/journal"
	"hm/roles"
)

// Panes is how the broker reaches agents hosted in pseudo-terminals.
type Panes interface {
	// Hosted reports whether role has a running (or restarting) hosted pane
	// that accepts deliveries.
	Hosted(role string) bool
	// Deliver queues d for role's pane. It never blocks.
	Deliver(role string, d PaneDelivery)
	// Health reports the pane's state for health-check.
	Health(role string) (state string, lastActivity time.Time, ok bool)
}

// PaneDelivery is one message for a pane. Typed is called synchronously once
// the text is in the pane, just before Enter is pressed; it returns once
// the ledger's record of the typing is queued, ahead of the submission's
// (the row stays brokered: a crash now leaves it to be typed again after
// restart, into a new program). Submitted
// is called synchronously once the outcome of Enter is known (proven: the
// program reacted); it returns after the ledger has committed the message
// as routed, after which it is never typed again. Failed is called if the
// message cannot be typed. Retyping is called when the program ended while
// the message was being typed, before its Enter (err says when): it is
// typed again, whole, after the restart.
type PaneDelivery struct {
	MessageID string
	Content   string
	Urgent    bool
	// Claimable lets a claim (a CLI hook, PaneClaimer) take the message
	// before its typing begins. Messages a WebSocket listener of the role
	// was handed are not claimable: the listener has them.
	Claimable bool
	// Callbacks are the message's events, each writing the ledger's
	// row for it (dispatch.go); the hub passes them to the pane as they
	// are.
	paneevents.Callbacks
}

// maxHeld bounds the erased input the ledger keeps (event cleared).
const maxHeld = 2000

// PaneClaimer is implemented by a Panes whose panes let another path take
// queued messages: the claim frame of a CLI hook (claim.go). It is
// optional: without it a claim takes nothing.
type PaneClaimer interface {
	// Claim takes out of role's pane queue, in queue order, up to max
	// messages delivered Claimable whose typing has not begun. The pane
	// will not type them unless they are returned. midTurn: the taker
	// puts them into the turn under way (proto.ClaimRequest.MidTurn),
	// which the pane refuses while an interrupt it sent is in flight.
	Claim(role string, max int, midTurn bool) []PaneClaim
}

// PaneStateReporter is implemented by a Panes whose panes take the state a
// CLI hook reports with its claim (proto.ClaimRequest.State). Optional.
type PaneStateReporter interface {
	// ReportState records state (ready, busy, waiting_for_human) for
	// role's pane; an unknown state is an error.
	ReportState(role, state string) error
}

// PaneSessionReporter is implemented by a Panes whose panes take the CLI
// session id a hook reports with its claim (proto.ClaimRequest.SessionID),
// to resume that session when the program dies. Optional.
type PaneSessionReporter interface {
	// ReportSession records id for role's pane; an id that cannot name
	// a session on a command line is an error.
	ReportSession(role, id string) error
}

// PaneClaim is one message a claim took from a pane's queue.
type PaneClaim struct {
	MessageID string
	// Text is the message rendered for the agent's context
	// (proto.ClaimedMessage.Text).
	Text   string
	Urgent bool
	// Return gives the message back to the pane's queue, at its place, to
	// be typed. It may be called more than once; only the first counts.
	Return func()
}

// Telegram is the outbound side of the Telegram relay.
type Telegram interface {
	Enabled() bool
	OwnerChat() string
	LastInbound() (chatID string, at time.Time)
	Send(ctx context.Context, parentID, chatID, senderRole, body string) error
}

// Background handles background-agent control frames (SPEC §8).
type Background interface {
	// Handle runs action for caller. The result is the frame's result
	// object; ok=false results are a proto.BgRefusal with a Status.
	Handle(ctx context.Context, action string, payload json.RawMessage) (result proto.BgResult, ok bool)
	// Running reports whether the background slot role is running.
	Running(role string) bool
}

// Config configures a Broker.
// DefaultClaimLease is Config.ClaimLease's default.
const DefaultClaimLease = 5 * time.Second

type Config struct {
	Team      *roles.Team
	Session   int    // session number N
	SessionID string // "app-session-N"
	// SessionStarted is when the session began: the date of its session
	// lines (zero: the date they are made).
	SessionStarted time.Time
	Tokens         *Tokens
	AllowAnonymous bool
	RateLimit      float64 // frames per second per connection; 0 = off
	RateBurst      int
	// SendQueue bounds each connection's outbound frames; a client that
	// lets it fill is dropped (slow consumer).
	SendQueue int
	// UserWindow is how long after an inbound Telegram message `user`
	// messages are also sent to Telegram (SPEC §3: 5 minutes).
	UserWindow time.Duration
	// DelayedMaxAge is how old a pending message from an earlier session may
	// be and still be delivered (SPEC §10: 10 minutes).
	DelayedMaxAge time.Duration
	// ReminderAfter is how long an [ACK REQUIRED] obligation stays open
	// before its one reminder (SPEC §10: 10 minutes).
	ReminderAfter time.Duration
	// RegisterTimeout is how long a connection may stay without
	// registering before the hub closes it (default 5s).
	RegisterTimeout time.Duration
	// Connection budgets (budget.go): past one a new connection of its
	// kind gets HTTP 503, whatever the others hold. MaxConns caps the
	// agents' connections on "/": registered, or carrying a valid token in
	// their upgrade request (default 256). MaxUnregistered caps the
	// connections on "/" that carry none, until they register (default
	// 32). MaxOperatorConns caps the cockpit's (ServeOperatorWS, default
	// 32).
	MaxConns         int
	MaxUnregistered  int
	MaxOperatorConns int
	// ClaimLease (DefaultClaimLease) is how long claimed messages wait for their claim-ack
	// before they go back to their pane (default 5s).
	ClaimLease time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// Noticer hears what may deserve telling the person at the machine;
// internal/notify decides what does (issue #34). Its methods must not
// block.
type Noticer interface {
	// Routed: a committed message was handed to its recipients.
	Routed(m journal.Message)
	// Stuck: role's pane could not get m submitted, for reason.
	Stuck(m journal.Message, role, reason string)
	// Reminded: an obligation left open got its reminder.
	Reminded(o journal.Obligation)
}

// Deps are the broker's collaborators. Panes, Telegram, Background,
// Remote and Notices may be nil.
type Deps struct {
	Ledger     *journal.Ledger
	Panes      Panes
	Telegram   Telegram
	Background Background
	// Remote reaches roles other hubs host (remote.go; hm up --nats).
	Remote Remote
	// Notices hears what may deserve a notification.
	Notices Noticer
}

// Broker routes messages. Create with New; serve Handler; stop with Close.
type Broker struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	// team is the team the broker routes for: hm reload replaces it
	// (SetTeam) while frames are served.
	team   atomic.Pointer[roles.Team]
	seqs   *sequencer
	nextID atomic.Int64
	// The connection budgets: agents (MaxConns), unregistered and
	// operatorConns (budget.go).
	agents, unregistered, operatorConns *Budget

	mu        sync.Mutex
	conns     map[int64]*conn
	listeners map[string]map[int64]*conn // role -> listeners
	lastSeen  map[string]time.Time       // role -> last frame from a registered conn
	waiters   map[string][]chan struct{} // message id -> waiters for a status change
	closed    bool
	// wakers are the claims waiting for a message (wake.go).
	wakers claimWaiters
	// remindKick wakes RunReminders: an [ACK REQUIRED] message committed.
	remindKick periodic.Kick
	// remindRounds counts the looks at the open obligations (tests).
	remindRounds atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Broker. Its background work (reminders) runs until Close.
func New(cfg Config, deps Deps) *Broker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Team == nil {
		cfg.Team = roles.Default()
	}
	if cfg.Tokens == nil {
		cfg.Tokens = NewTokens("")
	}
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = 4096
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = int(2 * cfg.RateLimit)
	}
	if cfg.UserWindow == 0 {
		cfg.UserWindow = 5 * time.Minute
	}
	if cfg.DelayedMaxAge == 0 {
		cfg.DelayedMaxAge = 10 * time.Minute
	}
	if cfg.RegisterTimeout <= 0 {
		cfg.RegisterTimeout = 5 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.MaxUnregistered <= 0 {
		cfg.MaxUnregistered = 32
	}
	if cfg.MaxOperatorConns <= 0 {
		cfg.MaxOperatorConns = 32
	}
	if cfg.ClaimLease <= 0 {
		cfg.ClaimLease = DefaultClaimLease
	}
	if cfg.ReminderAfter == 0 {
		cfg.ReminderAfter = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{
		cfg:        cfg,
		deps:       deps,
		log:        cfg.Logger,
		seqs:       newSequencer(),
		remindKick: periodic.NewKick(),
		conns:      map[int64]*conn{},
		listeners:  map[string]map[int64]*conn{},
		lastSeen:   map[string]time.Time{},
		waiters:    map[string][]chan struct{}{},
		ctx:        ctx,
		cancel:     cancel,
		agents: NewBudget("agents", cfg.MaxConns,
			"close idle clients and retry"),
		unregistered: NewBudget("connections without a token", cfg.MaxUnregistered,
			"send the token with the upgrade (Authorization: Bearer <token>, or ?token=) to be counted as an agent, and register within "+cfg.RegisterTimeout.String()),
		operatorConns: NewBudget("cockpit connections", cfg.MaxOperatorConns,
			"close cockpit tabs you no longer use and retry"),
	}
	b.team.Store(cfg.Team)
	return b
}

// Team returns the team the broker routes for.
func (b *Broker) Team() *roles.Team { return b.team.Load() }

// SetTeam makes t the team the broker routes for (hm reload): a target
// only t knows is accepted from now on, one t no longer has is refused
// invalid_target. Frames being handled finish with the team they read.
func (b *Broker) SetTeam(t *roles.Team) { b.team.Store(t) }

// SessionID returns the session id ("app-session-N").
func (b *Broker) SessionID() string { return b.cfg.SessionID }

// Close ends every connection and waits for the broker's goroutines.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	conns := make([]*conn, 0, len(b.conns))
	for _, c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	b.cancel()
	for _, c := range conns {
		c.close()
	}
	b.wg.Wait()
}

// Handler serves the WebSocket endpoint "/".
func (b *Broker) Handler() http.Handler { return http.HandlerFunc(b.serveWS) }

// ConnCount returns the number of open connections.
func (b *Broker) ConnCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// ListenerRoles returns the roles that currently have listeners.
func (b *Broker) ListenerRoles() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for r, m := range b.listeners {
		if len(m) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func (b *Broker) now() time.Time { return b.cfg.Now() }

func (b *Broker) touch(role string) {
	if role == "" {
		return
	}
	b.mu.Lock()
	b.lastSeen[role] = b.now()
	b.mu.Unlock()
}
