package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"hm/broker"
	"hm/internal/federation"
	"hm/roles"
)

// NATSOptions are hm up's federation flags (docs/protocol.md §16); empty
// fields take settings.json "nats".
type NATSOptions struct {
	URL   string
	Creds string
	Team  string
	Hub   string
	// Tuning for tests; zero values take production defaults.
	PresenceEvery time.Duration // presence republished (default 5s; TTL 3x)
	OutboxEvery   time.Duration // outbox flushed (default 5s, and on reconnection)
	AckWait       time.Duration // consumers' AckWait (default 5m)
	ReconnectWait time.Duration // between reconnection attempts (default 1s)
}

// DefaultNATSTeam is the team name without --team or settings.
const DefaultNATSTeam = "hm"

// fedHub is the hub's federation: the NATS client, the other hubs'
// presence, and the loops that publish presence, consume the roles this hub
// hosts and flush the outbox. It implements broker.Remote.
type fedHub struct {
	h     *Hub
	log   *slog.Logger
	opts  NATSOptions
	c     *federation.Client
	peers *federation.Peers

	// consumers are the running consumers by role (presenceLoop alone
	// starts and stops them, following hostedRoles).
	consumers map[string]context.CancelFunc

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// conflict is the last ErrDuplicateHub seen (hm status), by the
	// other hub's origin, each logged once.
	conflictMu sync.Mutex
	conflict   string
	conflicts  map[string]bool
}

// nameCheckTimeout bounds the start-up look for another hub with this
// hub's name.
const nameCheckTimeout = 5 * time.Second

// duplicate records another live hub using this hub's name: an error in
// the log (once per such hub) and in hm status, since messages between the
// two would otherwise wait unseen.
func (f *fedHub) duplicate(p federation.Presence, err error) {
	f.conflictMu.Lock()
	defer f.conflictMu.Unlock()
	f.conflict = err.Error()
	if f.conflicts[p.Origin] {
		return
	}
	if f.conflicts == nil {
		f.conflicts = map[string]bool{}
	}
	f.conflicts[p.Origin] = true
	f.log.Error("another hub uses this hub's name", "err", err)
}

// conflictText is the last duplicate name seen, "" when none.
func (f *fedHub) conflictText() string {
	f.conflictMu.Lock()
	defer f.conflictMu.Unlock()
	return f.conflict
}

// natsOptions merges the flags over settings.json "nats".
func (h *Hub) natsOptions() NATSOptions {
	o := h.opts.NATS
	s := h.Team().NATS
	if o.URL == "" {
		o.URL = s.URL
	}
	if o.Creds == "" {
		o.Creds = s.Creds
	}
	if o.Team == "" {
		o.Team = s.Team
	}
	if o.Team == "" {
		o.Team = DefaultNATSTeam
	}
	if o.Hub == "" {
		o.Hub = s.Hub
	}
	if o.PresenceEvery <= 0 {
		o.PresenceEvery = 5 * time.Second
	}
	if o.OutboxEvery <= 0 {
		o.OutboxEvery = 5 * time.Second
	}
	return o
}

// startFederation connects to NATS when a URL is configured and sets
// deps.Remote; without one it does nothing at all. A name another live hub
// of the team uses is refused (federation.ErrDuplicateHub).
func (h *Hub) startFederation(ctx context.Context, deps *broker.Deps) error {
	o := h.natsOptions()
	if o.URL == "" {
		return nil
	}
	log := h.log.With("component", "federation")
	c, err := federation.Connect(federation.Config{URL: o.URL, CredsFile: o.Creds, Team: o.Team, Hub: o.Hub, Root: h.Layout.Root, Logger: log,
		AckWait: o.AckWait, ReconnectWait: o.ReconnectWait})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, nameCheckTimeout)
	err = c.CheckName(cctx)
	cancel()
	if err != nil {
		c.Close()
		return err
	}
	f := &fedHub{h: h, log: log.With("hub", c.Hub()), opts: o, c: c, consumers: map[string]context.CancelFunc{}}
	f.peers = federation.NewPeers(c.Hub(), h.hostsLocally, c.Signing(), log, nil)
	h.fed = f
	deps.Remote = f
	h.components = append(h.components, f)
	log.Info("federated", "url", o.URL, "team", o.Team, "hub", c.Hub(), "signed", c.Signing())
	return nil
}

// hostsLocally reports whether this hub serves role itself: a pane of it,
// or a WebSocket listener registered here (broker.Serves, the one rule).
func (h *Hub) hostsLocally(role string) bool {
	return h.Broker != nil && h.Broker.Serves(role).Hosted()
}

// run starts the loops; call once, after the broker exists and Recover ran.
func (f *fedHub) run(ctx context.Context) {
	ctx, f.cancel = context.WithCancel(ctx)
	stopWatch, err := f.c.WatchPresence(func(p federation.Presence, err error) {
		if err == nil {
			err = f.peers.Accept(p)
		}
		switch {
		case errors.Is(err, federation.ErrDuplicateHub):
			f.duplicate(p, err)
		case err != nil:
			f.log.Warn("presence refused", "err", err)
		}
	})
	if err != nil {
		f.log.Error("watch presence", "err", err)
	}
	f.goLoop(func() {
		<-ctx.Done()
		if stopWatch != nil {
			stopWatch()
		}
	})
	f.goLoop(func() { f.presenceLoop(ctx) })
	f.goLoop(func() { f.outboxLoop(ctx) })
}

func (f *fedHub) goLoop(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

// stop ends the loops and the connection.
func (f *fedHub) stop(context.Context) {
	if f.cancel != nil {
		f.cancel()
	}
	f.wg.Wait()
	f.c.Close()
}

// stateListening is the presence state of a role this hub serves through
// a WebSocket listener only (no pane).
const stateListening = "listening"

// presence is the main roles this hub serves (broker.Serves: a pane, or a
// WebSocket listener), each once, in team order, with its pane's state, or
// "listening" for a role served by a listener alone.
func (f *fedHub) presence() []federation.RoleState {
	var out []federation.RoleState
	for _, m := range f.h.Team().Members() {
		s := f.h.Broker.Serves(m.Role)
		switch {
		case s.Pane:
			state, _, _ := f.h.panes.Health(m.Role)
			out = append(out, federation.RoleState{Role: m.Role, State: state})
		case s.Listening:
			out = append(out, federation.RoleState{Role: m.Role, State: stateListening})
		}
	}
	return out
}

// syncConsumers runs one consumer for each role in cur and stops those of
// roles no longer served here (a listener gone): what such a consumer held
// unacknowledged is redelivered, to whichever hub serves the role next.
func (f *fedHub) syncConsumers(ctx context.Context, cur []federation.RoleState) {
	keep := make(map[string]bool, len(cur))
	for _, r := range cur {
		keep[r.Role] = true
		if _, ok := f.consumers[r.Role]; ok {
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		f.consumers[r.Role] = cancel
		role := r.Role
		f.goLoop(func() { f.c.Consume(cctx, role, f.take) })
		f.log.Debug("consumer started", "role", role, "state", r.State)
	}
	for role, cancel := range f.consumers {
		if !keep[role] {
			cancel()
			delete(f.consumers, role)
			f.log.Info("consumer stopped: the role is no longer served here", "role", role)
		}
	}
}

// presenceLoop publishes presence every PresenceEvery and as soon as a
// role's state changes (checked five times as often), and keeps one
// consumer per role it lists.
func (f *fedHub) presenceLoop(ctx context.Context) {
	tick := time.NewTicker(f.opts.PresenceEvery / 5)
	defer tick.Stop()
	var last []federation.RoleState
	var at time.Time
	for {
		cur := f.presence()
		f.syncConsumers(ctx, cur)
		if !slices.Equal(cur, last) || time.Since(at) >= f.opts.PresenceEvery {
			if err := f.c.PublishPresence(cur, 3*f.opts.PresenceEvery); err == nil {
				last, at = cur, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// outboxLoop ensures the stream and forwards what waits in the ledger:
// at once on every (re)connection, and every OutboxEvery.
func (f *fedHub) outboxLoop(ctx context.Context) {
	tick := time.NewTicker(f.opts.OutboxEvery)
	defer tick.Stop()
	streamOK := false
	for {
		minAge := time.Second
		select {
		case <-ctx.Done():
			return
		case <-f.c.Up():
			minAge, streamOK = 0, false
		case <-tick.C:
		}
		if !f.c.Connected() {
			continue
		}
		if !streamOK {
			if err := f.c.EnsureStream(ctx); err != nil {
				f.log.Warn("ensure stream", "err", err)
				continue
			}
			streamOK = true
		}
		sent, queued, err := f.h.Broker.FlushRemote(ctx, minAge)
		switch {
		case err != nil:
			f.log.Warn("outbox", "err", err)
		case sent+queued > 0:
			f.log.Info("outbox flushed", "forwarded", sent, "queued", queued)
		}
	}
}

// errUnknownHub: the sending hub's presence has not been seen (yet); the
// message is redelivered later.
var errUnknownHub = fmt.Errorf("%w: the sending hub's presence has not been seen", federation.ErrRetry)

// take is the consumers' handler: the envelope must come from the hub it
// names (signed by it when this hub has credentials), and the sender must
// be a role that hub's presence claims (or that hub's user/system); then
// the broker records the message and waits until the pane or a listener
// has it.
func (f *fedHub) take(ctx context.Context, e federation.Envelope, progress func()) error {
	if err := e.Authentic(f.c.Signing()); err != nil {
		return fmt.Errorf("%w: %v", federation.ErrRefused, err)
	}
	if e.From == roles.RoleUser || e.From == roles.RoleSystem {
		if !f.peers.Live(e.Hub) {
			return fmt.Errorf("%w: %s", errUnknownHub, e.Hub)
		}
	} else if f.h.hostsLocally(e.From) {
		return fmt.Errorf("%w: %s sent as %s, which this hub hosts", federation.ErrRefused, e.Hub, e.From)
	} else if !f.peers.Claims(e.Hub, e.From) {
		if p, ok := f.peers.Host(e.From); ok {
			return fmt.Errorf("%w: %s sent as %s, which hub %s hosts", federation.ErrRefused, e.Hub, e.From, p.Hub)
		}
		return fmt.Errorf("%w: %s for %s", errUnknownHub, e.Hub, e.From)
	}
	err := f.h.Broker.AcceptRemote(ctx, broker.RemoteMessage{
		MessageID: e.MessageID, From: e.From, Target: e.Target, Seq: e.Seq, Header: e.Header, Content: e.Content,
		Priority: e.Priority, Channel: e.Channel, SentAtMs: e.SentAtMs, Metadata: string(e.Metadata), Hub: e.Hub,
	}, progress)
	switch {
	case errors.Is(err, broker.ErrRemoteRefused):
		return fmt.Errorf("%w: %v", federation.ErrRefused, err)
	case errors.Is(err, broker.ErrRemoteNotServed):
		return fmt.Errorf("%w: %v", federation.ErrRetry, err)
	}
	return err
}

var _ broker.Remote = (*fedHub)(nil)

// Pane implements broker.Remote.
func (f *fedHub) Pane(role string) (broker.RemotePane, bool) {
	p, ok := f.peers.Host(role)
	if !ok {
		return broker.RemotePane{}, false
	}
	return broker.RemotePane{Hub: p.Hub, State: p.State, LastSeen: p.Seen}, true
}

// Forward implements broker.Remote.
func (f *fedHub) Forward(ctx context.Context, m broker.RemoteMessage) error {
	e := federation.Envelope{MessageID: m.MessageID, From: m.From, Target: m.Target, Seq: m.Seq, Header: m.Header,
		Content: m.Content, Priority: m.Priority, Channel: m.Channel, SentAtMs: m.SentAtMs}
	if m.Metadata != "" && m.Metadata != "{}" {
		e.Metadata = []byte(m.Metadata)
	}
	return f.c.Publish(ctx, e)
}

// RemotePanes lists the roles other hubs host (hm status, /status).
func (h *Hub) RemotePanes() []federation.RemotePane {
	if h.fed == nil {
		return nil
	}
	return h.fed.peers.Panes()
}

// Federated reports this hub's NATS identity and whether its connection is
// up; ok is false when the hub is not federated.
func (h *Hub) Federated() (hub string, connected, ok bool) {
	if h.fed == nil {
		return "", false, false
	}
	return h.fed.c.Hub(), h.fed.c.Connected(), true
}

// FederationStatus is the federation in Status (hm status, /status).
type FederationStatus struct {
	Hub       string `json:"hub"`
	Team      string `json:"team"`
	Connected bool   `json:"connected"`
	// RemotePanes are the roles other hubs host, from their presence.
	RemotePanes []RemotePaneStatus `json:"remotePanes"`
	// Unhosted are the team's remote roles (transport "remote") that no
	// live hub's presence claims: messages for them wait in JetStream.
	Unhosted []string `json:"unhosted"`
	// Conflict is set when another live hub of the team uses this hub's
	// name (federation.ErrDuplicateHub).
	Conflict string `json:"conflict,omitempty"`
}

// RemotePaneStatus is a pane another hub hosts.
type RemotePaneStatus struct {
	Role       string `json:"role"`
	Hub        string `json:"hub"`
	State      string `json:"state"`
	LastSeenMs int64  `json:"lastSeenMs"`
}

func (h *Hub) federationStatus() *FederationStatus {
	if h.fed == nil {
		return nil
	}
	st := &FederationStatus{Hub: h.fed.c.Hub(), Team: h.fed.opts.Team, Connected: h.fed.c.Connected(),
		RemotePanes: []RemotePaneStatus{}, Unhosted: []string{}, Conflict: h.fed.conflictText()}
	hosted := map[string]bool{}
	for _, p := range h.fed.peers.Panes() {
		hosted[p.Role] = true
		st.RemotePanes = append(st.RemotePanes, RemotePaneStatus{Role: p.Role, Hub: p.Hub, State: p.State, LastSeenMs: p.Seen.UnixMilli()})
	}
	for _, m := range h.Team().Members() {
		if m.Transport == roles.TransportRemote && !hosted[m.Role] {
			st.Unhosted = append(st.Unhosted, m.Role)
		}
	}
	return st
}
