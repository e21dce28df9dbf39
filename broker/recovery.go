// This file recovers at startup: messages left pending by earlier sessions
// are delivered late (delayed) or expired.

package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"hm/internal/ground/status"

	"hm/broker/proto"
	"hm/journal"
	"hm/roles"
)

// routeFor rebuilds a route from a committed row (restart recovery and late
// listeners). A row with no route left is refused: no_route for a target
// the team no longer has, telegram_unconfigured for a `telegram` row with
// no chat to send to (telegramChat).
func (b *Broker) routeFor(m journal.Message) (route, error) {
	switch m.TargetRole {
	case roles.RoleAll:
		rt := route{name: m.TargetRole, kind: roles.TargetAll}
		for _, mem := range b.Team().Members() {
			if mem.Role != m.SenderRole {
				rt.members = append(rt.members, mem)
			}
		}
		return rt, nil
	case roles.RoleUser:
		return route{name: m.TargetRole, kind: roles.TargetUser}, nil
	case roles.RoleTelegram:
		chat, err := b.telegramChat()
		if err != nil {
			return route{}, err
		}
		return route{name: m.TargetRole, kind: roles.TargetTelegram, telegram: chat}, nil
	}
	if skip, ok := roles.CutOthers(m.TargetRole); ok {
		rt := route{name: m.TargetRole, kind: roles.TargetMember}
		for _, mem := range b.Team().Members() {
			if mem.Role != skip && mem.Role != m.SenderRole {
				rt.members = append(rt.members, mem)
			}
		}
		return rt, nil
	}
	mem, ok := b.Team().Lookup(m.TargetRole)
	if !ok {
		return route{}, refuse(status.CodeNoRoute, "%s is not a member of the team", m.TargetRole)
	}
	return route{name: m.TargetRole, kind: roles.TargetMember, members: []roles.Member{mem}}, nil
}

// sessionScopedMeta is the metadata of a lifecycle notice
// (Submission.SessionScoped): it expires with its session.
const sessionScopedMeta = `{"scope":"session"}`

// sessionScoped reports whether m is a lifecycle notice of the hub, which
// is never delivered in a later session than its own.
func sessionScoped(m journal.Message) bool {
	return m.SenderRole == roles.RoleSystem && m.MetadataJSON == sessionScopedMeta
}

// ExpireStale fails, with expired_session, the messages earlier sessions
// left pending that are older than DelayedMaxAge, and the lifecycle
// notices they left pending whatever their age, and returns how many.
// The hub calls it before it builds the startup briefing, which lists
// them as failed (SPEC §10); Recover does the same for any it finds.
func (b *Broker) ExpireStale(ctx context.Context) (int, error) {
	pending, err := b.deps.Ledger.Pending(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("expire pending: %w", err)
	}
	now := b.now()
	expired := 0
	for _, m := range pending {
		if b.expire(m, now) {
			expired++
		}
	}
	return expired, nil
}

// expire fails m with expired_session if an earlier session left it and it
// is older than DelayedMaxAge at now, or is a lifecycle notice of that
// session (sessionScoped).
func (b *Broker) expire(m journal.Message, now time.Time) bool {
	if m.SessionID == b.cfg.SessionID {
		return false
	}
	age := now.Sub(time.UnixMilli(m.BrokeredAtMs))
	reason := ""
	switch {
	case sessionScoped(m):
		reason = "a lifecycle notice of " + m.SessionID + ", which ended"
	case age <= b.cfg.DelayedMaxAge:
		return false
	}
	b.advance(journal.Expired(m.MessageID, age.Milliseconds(), reason))
	return true
}

// Recover re-routes messages left pending by earlier sessions: under
// DelayedMaxAge they are delivered with a "[delayed from session N]" prefix,
// older ones and the hub's lifecycle notices fail with expired_session. Call once at start, after panes are
// up. It returns how many were re-routed and expired.
func (b *Broker) Recover(ctx context.Context) (delivered, expired int, err error) {
	pending, err := b.deps.Ledger.Pending(ctx, "")
	if err != nil {
		return 0, 0, fmt.Errorf("recover pending: %w", err)
	}
	now := b.now()
	for _, m := range pending {
		if m.SessionID == b.cfg.SessionID {
			continue
		}
		if b.expire(m, now) {
			expired++
			continue
		}
		rt, err := b.routeFor(m)
		if err != nil {
			b.advance(journal.Unroutable(m.MessageID, proto.CodeOf(err), err.Error()))
			expired++
			continue
		}
		b.dispatch(m, rt, delayedPrefix(m))
		b.forwardRemote(ctx, m, rt)
		delivered++
	}
	return delivered, expired, nil
}

func delayedPrefix(m journal.Message) string {
	n := strings.TrimPrefix(m.SessionID, roles.SessionPrefix)
	return "[delayed from session " + n + "] "
}
