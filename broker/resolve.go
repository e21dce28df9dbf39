// This file resolves a submission's target into recipients (SPEC §3),
// applying owner binding and the checks that must refuse before commit.

package broker

import (
	"hm/internal/ground/status"
	"hm/roles"
)

// route is a resolved destination list.
type route struct {
	name     string // ledger target_role
	kind     roles.TargetKind
	members  []roles.Member // member recipients
	telegram string         // chat id for telegram delivery, "" if none
}

// resolve turns the submission's target into recipients, applying owner
// binding and the availability checks that must refuse before commit.
func (b *Broker) resolve(sender string, s Submission) (route, error) {
	senderMember, isMember := b.Team().Lookup(sender)
	bgSender := isMember && senderMember.Background && senderMember.Role == sender
	if len(s.Recipients) > 0 {
		rt := route{name: s.TargetName, kind: roles.TargetMember}
		for _, r := range s.Recipients {
			m, ok := b.Team().Lookup(r)
			if !ok {
				return rt, refuse(status.CodeInvalidTarget, "unknown recipient %q", r)
			}
			if bgSender && m.Role != senderMember.Owner {
				return rt, refuse(status.CodeOwnerBindingViolation, "%s may message %s only", sender, senderMember.Owner)
			}
			if m.Role != sender {
				rt.members = append(rt.members, m)
			}
		}
		if len(rt.members) == 0 {
			return rt, refuse(status.CodeInvalidTarget, "no recipients other than the sender")
		}
		return rt, nil
	}
	target := s.Target
	if s.Broadcast {
		target = roles.RoleAll
	}
	t, err := b.Team().Resolve(target)
	if err != nil {
		return route{}, refuse(status.CodeInvalidTarget, "%v", err)
	}
	if bgSender && !(t.Kind == roles.TargetMember && t.Member.Role == senderMember.Owner) {
		return route{}, refuse(status.CodeOwnerBindingViolation, "%s may message %s only", sender, senderMember.Owner)
	}
	rt := route{name: t.Name(), kind: t.Kind}
	switch t.Kind {
	case roles.TargetAll:
		for _, m := range b.Team().Members() {
			if m.Role != sender {
				rt.members = append(rt.members, m)
			}
		}
	case roles.TargetMember:
		if isRemote(t.Member) && b.deps.Remote == nil {
			return rt, refuse(status.CodeNoRoute, "%s is hosted by another hub and this hub is not federated (hm up --nats)", t.Member.Role)
		}
		if t.Member.Background && !b.backgroundRunning(t.Member.Role) {
			return rt, refuse(status.CodeNoRoute, "%s is not running", t.Member.Role)
		}
		rt.members = []roles.Member{t.Member}
	case roles.TargetTelegram:
		chat, err := b.telegramChat()
		if err != nil {
			return rt, err
		}
		rt.telegram = chat
	case roles.TargetUser:
		if tg := b.deps.Telegram; tg != nil && tg.Enabled() {
			if chat, at := tg.LastInbound(); chat != "" && b.now().Sub(at) <= b.cfg.UserWindow {
				rt.telegram = chat
			}
		}
	}
	return rt, nil
}

// telegramChat is the chat `telegram` sends go to (the owner chat), or
// the telegram_unconfigured refusal when there is none: no relay (no bot
// token), or a relay with neither TELEGRAM_CHAT_ID nor an allowlist. Sends
// and restart recovery share it, so no row is ever routed to no chat.
func (b *Broker) telegramChat() (string, error) {
	tg := b.deps.Telegram
	if tg == nil || !tg.Enabled() {
		return "", refuse(status.CodeTelegramUnconfigured, "no Telegram bot token is configured")
	}
	chat := tg.OwnerChat()
	if chat == "" {
		return "", refuse(status.CodeTelegramUnconfigured, "no Telegram chat to send to: set TELEGRAM_CHAT_ID or TELEGRAM_CHAT_ALLOWLIST")
	}
	return chat, nil
}

func (b *Broker) backgroundRunning(role string) bool {
	if b.deps.Background != nil {
		return b.deps.Background.Running(role)
	}
	return b.deps.Panes != nil && b.deps.Panes.Hosted(role)
}
