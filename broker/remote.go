// This file is the broker's side of federation (docs/protocol.md §16):
// roles another hub hosts (transport "remote"), reached through an
// optional Remote (internal/hub/federation.go over internal/federation).
// The sender's hub numbers and commits a message, then forwards it and
// ACKs after both; a message it cannot forward stays in its ledger,
// accepted.queued_remote, for FlushRemote. The hosting hub records what it
// receives under the same id before typing it (AcceptRemote).

package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/roles"
)

// Remote is how the broker reaches roles other hubs host. Optional: a
// hub without it refuses messages for remote roles with no_route.
type Remote interface {
	// Pane reports the hub that hosts role and its pane's state, as that
	// hub's presence last said.
	Pane(role string) (RemotePane, bool)
	// Forward stores m durably for the hub that hosts m.Target (a JetStream
	// PubAck; a republish of the same id is stored once). It fails at once
	// when NATS cannot be reached.
	Forward(ctx context.Context, m RemoteMessage) error
}

// RemotePane is a role another hub hosts.
type RemotePane struct {
	Hub      string
	State    string
	LastSeen time.Time
}

// RemoteMessage is a committed message crossing hubs: what the sender's
// hub forwards and the hosting hub accepts.
type RemoteMessage struct {
	MessageID string
	From      string
	Target    string
	Seq       int64
	Header    string
	Content   string
	Priority  string
	Channel   string
	SentAtMs  int64
	Metadata  string
	// Hub is the sending hub (AcceptRemote records it).
	Hub string
}

// ErrRemoteRefused is wrapped by AcceptRemote's refusals: the message must
// not be delivered here, now or later.
var ErrRemoteRefused = errors.New("remote message refused")

// ErrRemoteNotServed is wrapped when AcceptRemote's target is a role this
// hub may serve but does not now (its listener went away): the message is
// left for later, here or on the hub that serves the role next.
var ErrRemoteNotServed = errors.New("remote message: the role is not served here now")

// remoteWaitProgress is how often AcceptRemote says it is still working
// while a pane types (the consumer's InProgress).
const remoteWaitProgress = 5 * time.Second

// isRemote reports whether mem is hosted by another hub.
func isRemote(mem roles.Member) bool { return mem.Transport == roles.TransportRemote }

// Served is how this hub serves a role itself (Serves).
type Served struct {
	Pane      bool // a pane of this hub hosts it
	Listening bool // a WebSocket listener registered for it here
}

// Hosted reports whether this hub serves the role at all.
func (s Served) Hosted() bool { return s.Pane || s.Listening }

// Serves is the one rule for which roles this hub serves itself, which its
// federation advertises in presence and consumes (docs/protocol.md §16): a
// main member whose pane this hub hosts (transport pty), or a member that is
// not another hub's (transport not remote) with a WebSocket listener
// registered here. user and system are no members, so the operator, the
// cockpit, Telegram and hook connections are never among them.
func (b *Broker) Serves(role string) Served {
	mem, ok := b.Team().Lookup(role)
	if !ok || mem.Role != role || isRemote(mem) {
		return Served{}
	}
	var s Served
	s.Pane = mem.Transport == roles.TransportPTY && b.deps.Panes != nil && b.deps.Panes.Hosted(role)
	b.mu.Lock()
	s.Listening = len(b.listeners[role]) > 0
	b.mu.Unlock()
	return s
}

// forwardRemote forwards m to every remote member of rt (a message for
// several roles gets one row per remote role, id <messageId>:<role>,
// committed first). It reports whether any copy is left queued.
func (b *Broker) forwardRemote(ctx context.Context, m journal.Message, rt route) (queued bool) {
	var remote []roles.Member
	for _, mem := range rt.members {
		if isRemote(mem) {
			remote = append(remote, mem)
		}
	}
	if len(remote) == 0 || b.deps.Remote == nil {
		return false
	}
	if len(rt.members) == 1 {
		return b.forwardRow(ctx, m)
	}
	for _, mem := range remote {
		row, err := b.remoteCopy(ctx, m, mem.Role)
		if err != nil {
			b.log.Error("commit a remote copy", "messageId", m.MessageID, "role", mem.Role, "err", err)
			queued = true
			continue
		}
		if b.forwardRow(ctx, row) {
			queued = true
		}
	}
	if len(remote) == len(rt.members) && !queued {
		// Nothing of it is for this hub: the copies carry it on.
		b.advance(journal.ForwardedCopies(m.MessageID, len(remote)))
	}
	return queued
}

// remoteCopy commits (or finds) the row of m for one remote role.
func (b *Broker) remoteCopy(ctx context.Context, m journal.Message, role string) (journal.Message, error) {
	id := m.MessageID + ":" + role
	if prev, err := b.deps.Ledger.Get(ctx, id); err == nil {
		return prev, nil
	}
	row := m
	row.RowID, row.MessageID, row.TargetRole = 0, id, role
	row.Status, row.AckStatus, row.ErrorCode, row.Attempt = "", "", "", 0
	wait, err := b.deps.Ledger.AppendQueued(ctx, &row)
	if err != nil {
		return journal.Message{}, err
	}
	committed, err := wait(b.ctx)
	if errors.Is(err, journal.ErrDuplicate) {
		return b.deps.Ledger.Get(ctx, id)
	}
	return committed, err
}

// forwardRow forwards one row for a remote role and records the outcome:
// routed (event forwarded) after the PubAck, or accepted.queued_remote. It
// reports whether the row is left queued.
func (b *Broker) forwardRow(ctx context.Context, m journal.Message) (queued bool) {
	err := b.deps.Remote.Forward(ctx, RemoteMessage{
		MessageID: m.MessageID, From: m.SenderRole, Target: m.TargetRole, Seq: m.Seq, Header: m.Header,
		Content: m.RawBody, Priority: m.Priority, Channel: m.Channel, SentAtMs: m.SentAtMs, Metadata: m.MetadataJSON,
	})
	if err != nil {
		if m.AckStatus != status.AcceptedQueuedRemote {
			b.advance(journal.QueuedRemote(m.MessageID, err))
		}
		return true
	}
	hub := ""
	if p, ok := b.deps.Remote.Pane(m.TargetRole); ok {
		hub = p.Hub
	}
	b.advance(journal.Forwarded(m.MessageID, hub))
	return false
}

// FlushRemote is the outbox: it forwards every pending row for a remote
// role (accepted.queued_remote, or left by a hub that stopped between its
// commit and its PubAck) older than minAge. Run it when NATS comes back
// and now and then; a row already in JetStream is deduplicated there by
// its id. It returns how many were forwarded and how many stay queued.
func (b *Broker) FlushRemote(ctx context.Context, minAge time.Duration) (sent, queued int, err error) {
	if b.deps.Remote == nil {
		return 0, 0, nil
	}
	pending, err := b.deps.Ledger.Pending(ctx, "")
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: %w", err)
	}
	cutoff := b.now().Add(-minAge).UnixMilli()
	for _, m := range pending {
		if m.BrokeredAtMs > cutoff || ctx.Err() != nil {
			continue
		}
		rt, rerr := b.routeFor(m)
		if rerr != nil {
			continue
		}
		if !slices.ContainsFunc(rt.members, isRemote) {
			continue
		}
		if b.forwardRemote(ctx, m, rt) {
			queued++
		} else {
			sent++
		}
	}
	return sent, queued, nil
}

// AcceptRemote takes a message another hub forwarded for a role this hub
// hosts: it records it in the ledger under its id (once: a redelivery
// finds the row) and routes it like any message (to the pane, to the
// role's listeners), then waits until the ledger shows it typed,
// submitted, handed to a listener or otherwise settled, calling progress now
// and then. A nil return lets the consumer acknowledge it. Refusals wrap
// ErrRemoteRefused.
func (b *Broker) AcceptRemote(ctx context.Context, rm RemoteMessage, progress func()) error {
	mem, err := b.checkRemote(rm)
	if err != nil {
		b.refusedRemote(rm, err)
		return err
	}
	prev, gerr := b.deps.Ledger.Get(ctx, rm.MessageID)
	switch {
	case errors.Is(gerr, journal.ErrNotFound):
		if err := b.recordRemote(ctx, rm, mem); err != nil {
			return err
		}
	case gerr != nil:
		return gerr
	case !sameRemote(prev, rm):
		err := fmt.Errorf("%w: %s: messageId %s is already used here by %s", ErrRemoteRefused, status.CodeDuplicateID, rm.MessageID, prev.SenderRole)
		b.refusedRemote(rm, err)
		return err
	}
	return b.waitSettled(ctx, rm.MessageID, progress)
}

// sameRemote reports whether prev, the row this ledger holds under rm's id,
// is rm recorded before (a redelivery): the same sender, target and text,
// received from another hub. Anything else is another message that took
// the id first.
func sameRemote(prev journal.Message, rm RemoteMessage) bool {
	return prev.Direction == journal.DirectionInbound && prev.SenderRole == rm.From &&
		prev.TargetRole == rm.Target && prev.RawBody == rm.Content
}

// refusedRemote tells the sender of a message this hub refuses, through
// its own hub, why it was not delivered (the sending hub ACKed it when
// JetStream stored it). A message whose hub or sender could not be trusted
// never gets here (the federation refuses it first); nor does a role this
// hub does not serve now, which is retried.
func (b *Broker) refusedRemote(rm RemoteMessage, err error) {
	if !errors.Is(err, ErrRemoteRefused) {
		return
	}
	if sm, ok := b.Team().Lookup(rm.From); !ok || sm.Role != rm.From || b.Serves(sm.Role).Hosted() {
		return // not a member another hub hosts: nobody to tell there
	}
	b.log.Warn("message from another hub refused", "messageId", rm.MessageID, "hub", rm.Hub, "from", rm.From, "err", err)
	b.tellSender(journal.Message{MessageID: rm.MessageID, SenderRole: rm.From}, msgid.Failed(rm.MessageID),
		fmt.Sprintf("Your message %s to %s was refused by the hub that hosts %s: %v. It was not delivered.", rm.MessageID, rm.Target, rm.Target, err))
}

// checkRemote applies the rules a message from another hub must pass here:
// a valid id, a target this hub serves (Serves: a pane or a listener), a
// sender that is a team member (or user/system) this hub does not serve,
// owner binding. A target this hub could serve but does not now (no pane,
// no listener) is ErrRemoteNotServed; another hub's role is refused.
func (b *Broker) checkRemote(rm RemoteMessage) (roles.Member, error) {
	if !msgid.Valid(rm.MessageID) {
		return roles.Member{}, fmt.Errorf("%w: messageId %q", ErrRemoteRefused, rm.MessageID)
	}
	mem, ok := b.Team().Lookup(rm.Target)
	if !ok || mem.Role != rm.Target || isRemote(mem) {
		return roles.Member{}, fmt.Errorf("%w: %s is not hosted by this hub", ErrRemoteRefused, rm.Target)
	}
	if !b.Serves(mem.Role).Hosted() {
		return roles.Member{}, fmt.Errorf("%w: %s (no pane, no listener)", ErrRemoteNotServed, rm.Target)
	}
	if err := b.checkRemoteContent(rm); err != nil {
		return roles.Member{}, err
	}
	if rm.From == roles.RoleUser || rm.From == roles.RoleSystem {
		return mem, nil
	}
	sm, ok := b.Team().Lookup(rm.From)
	if !ok || sm.Role != rm.From {
		return roles.Member{}, fmt.Errorf("%w: sender %q is not a member of the team", ErrRemoteRefused, rm.From)
	}
	if b.Serves(sm.Role).Hosted() {
		return roles.Member{}, fmt.Errorf("%w: %s is hosted by this hub; another hub may not send as it", ErrRemoteRefused, sm.Role)
	}
	if sm.Background && sm.Owner != mem.Role {
		return roles.Member{}, fmt.Errorf("%w: %s: %s may message %s only", ErrRemoteRefused, status.CodeOwnerBindingViolation, sm.Role, sm.Owner)
	}
	return mem, nil
}

// checkRemoteContent applies the local send rules (queue) to what another
// hub forwards: the header, in the header field and at the start of the
// content, names the sender; the content is not blank after it; the
// priority is one the hub knows.
func (b *Broker) checkRemoteContent(rm RemoteMessage) error {
	names := func(header string) bool {
		role, known := b.Team().RoleForHeader(header)
		return known && role == rm.From
	}
	if rm.Header != "" && !names(rm.Header) {
		return fmt.Errorf("%w: %s: header %s does not name the sender %s", ErrRemoteRefused, status.CodeRoleMismatch, rm.Header, rm.From)
	}
	h, body, hasHeader := roles.ParseHeader(rm.Content)
	if hasHeader && !names(h.Role) {
		return fmt.Errorf("%w: %s: the content's header %s does not name the sender %s", ErrRemoteRefused, status.CodeRoleMismatch, h.Role, rm.From)
	}
	if strings.TrimSpace(body) == "" {
		return fmt.Errorf("%w: %s: no content", ErrRemoteRefused, status.CodeEmptyContent)
	}
	if !status.ValidPriority(rm.Priority) {
		return fmt.Errorf("%w: %s: priority %q", ErrRemoteRefused, status.CodeBadRequest, clip(rm.Priority, 64))
	}
	return nil
}

// remoteChannels are the channels a received row may keep (the ledger's
// CHECK list); others are recorded as ws.
var remoteChannels = map[string]bool{ChannelWS: true, ChannelTrigger: true, ChannelTelegram: true, ChannelUser: true, ChannelSystem: true}

// recordRemote commits rm (inbound, this session) and dispatches it to
// mem's pane.
func (b *Broker) recordRemote(ctx context.Context, rm RemoteMessage, mem roles.Member) error {
	channel := rm.Channel
	if !remoteChannels[channel] {
		channel = ChannelWS
	}
	priority := rm.Priority
	if priority == "" {
		priority = status.PriorityNormal
	}
	meta := rm.Metadata
	if meta == "" {
		meta = "{}"
	}
	now := b.now()
	row := &journal.Message{
		MessageID: rm.MessageID, SessionID: b.cfg.SessionID, SenderRole: rm.From, TargetRole: mem.Role,
		Channel: channel, Direction: journal.DirectionInbound, Seq: rm.Seq, Header: rm.Header, Priority: priority,
		SentAtMs: rm.SentAtMs, BrokeredAtMs: now.UnixMilli(), RawBody: rm.Content, MetadataJSON: meta,
		// A reply here may close an obligation this hub's ledger holds.
		Refs: roles.Refs(bodyOf(rm.Content)),
	}
	wait, err := b.deps.Ledger.AppendQueued(ctx, row)
	if err != nil {
		return fmt.Errorf("record remote %s: %w", rm.MessageID, err)
	}
	committed, err := wait(b.ctx)
	if errors.Is(err, journal.ErrDuplicate) {
		return nil // recorded meanwhile: settled by whoever did
	}
	if err != nil {
		return fmt.Errorf("record remote %s: %w", rm.MessageID, err)
	}
	b.advance(journal.Received(rm.MessageID, rm.Hub))
	b.dispatch(committed, route{name: mem.Role, kind: roles.TargetMember, members: []roles.Member{mem}}, "")
	return nil
}

// remoteSettled: the pane has the text (typed or further), or the row is
// final (failed, routed, acked).
func remoteSettled(m journal.Message) bool {
	return m.Status.Rank() >= status.Failed.Rank() || m.AckStatus.Rank() >= status.Typed.Rank()
}

// waitSettled waits until id's row is settled, calling progress every
// remoteWaitProgress.
func (b *Broker) waitSettled(ctx context.Context, id string, progress func()) error {
	wake := b.addWaiter(id)
	defer b.removeWaiter(id, wake)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastProgress := time.Now()
	for {
		m, err := b.deps.Ledger.Get(ctx, id)
		if err == nil && remoteSettled(m) {
			return nil
		}
		if time.Since(lastProgress) >= remoteWaitProgress && progress != nil {
			progress()
			lastProgress = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.ctx.Done():
			return b.ctx.Err()
		case <-wake:
		case <-tick.C:
		}
	}
}

// remoteHealth answers a health-check of a role another hub hosts from
// that hub's presence: its pane's state, with the hub; offline when no
// live presence claims the role.
func (b *Broker) remoteHealth(res proto.HealthResult) proto.HealthResult {
	if b.deps.Remote == nil {
		res.Status = "offline"
		return res
	}
	p, ok := b.deps.Remote.Pane(res.Role)
	if !ok {
		res.Status = "offline"
		return res
	}
	res.Hub = p.Hub
	if !p.LastSeen.IsZero() {
		res.LastSeen, res.AgeMs = p.LastSeen.UnixMilli(), b.now().Sub(p.LastSeen).Milliseconds()
	}
	switch p.State {
	case "exited", "starting":
		res.Status = p.State
	default:
		res.Healthy, res.Status = true, "healthy"
	}
	return res
}
