package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"hm/internal/ground/status"

	"hm/broker"
	"hm/broker/proto"
	"hm/broker/telegram"
	"hm/internal/ground/msgid"
	"hm/journal"
	"hm/roles"
)

// telegramDeliver commits an inbound Telegram update and queues it for the
// architect, whom every team has (roles.RoleArchitect).
func (h *Hub) telegramDeliver(ctx context.Context, in telegram.Inbound, text string) error {
	meta, _ := json.Marshal(map[string]any{"chatId": in.ChatID, "sender": in.Sender, "updateId": in.UpdateID})
	_, err := h.Broker.Submit(ctx, broker.Submission{From: roles.RoleUser, Target: roles.RoleArchitect, Content: text,
		MessageID: msgid.TelegramIn(in.UpdateID), HubID: true, Channel: broker.ChannelTelegram, Direction: "inbound",
		Metadata: meta, SentAt: in.Date})
	if err != nil && proto.CodeOf(err) == status.CodeJournalUnavailable {
		return err
	}
	if err != nil {
		h.telegramRefused(ctx, in, err)
	}
	return nil
}

// telegramRefused handles an update from an allowed chat that the hub
// refuses (a header naming a role, nothing after a header, any other
// refusal of the broker's): nothing is silently dropped. The update is recorded for the
// operator with the refusal's code, like one from a foreign chat (status
// recorded: no role sees it), and the chat it came from is told why.
func (h *Hub) telegramRefused(ctx context.Context, in telegram.Inbound, refusal error) {
	code := proto.CodeOf(refusal)
	h.log.Warn("telegram update refused", "update", in.UpdateID, "code", code, "err", refusal)
	if err := recordRefusedUpdate(ctx, h, in, code); err != nil {
		h.log.Warn("record refused telegram update", "update", in.UpdateID, "err", err)
	}
	reason := refusal.Error()
	var pe *proto.Error
	if errors.As(refusal, &pe) {
		reason = pe.Message
	}
	text := fmt.Sprintf("Not delivered to the %s (%s): %s", roles.RoleArchitect, code, reason)
	if err := h.relay.Send(ctx, msgid.Failed(in.MessageID()), in.ChatID, roles.RoleSystem, text); err != nil {
		h.log.Warn("tell the telegram chat of a refused update", "update", in.UpdateID, "err", err)
	}
}

// telegramStore keeps the relay's state in the ledger.
type telegramStore struct{ h *Hub }

func (s telegramStore) KVGet(ctx context.Context, key string) (string, bool, error) {
	return s.h.Ledger.KVGet(ctx, key)
}

func (s telegramStore) KVSet(ctx context.Context, key, value string) error {
	return s.h.Ledger.KVSet(ctx, key, value)
}

func (s telegramStore) RecordPart(ctx context.Context, p telegram.Part) error {
	meta, _ := json.Marshal(map[string]any{"parent": p.ParentID, "part": p.Index, "parts": p.Total, "chatId": p.ChatID})
	_, err := s.h.Ledger.Append(ctx, &journal.Message{
		MessageID: p.ID, SessionID: s.h.SessionID(), SenderRole: p.SenderRole, TargetRole: roles.RoleTelegram,
		Channel: broker.ChannelTelegram, Direction: "outbound", Header: s.h.Team().HeaderFor(p.SenderRole),
		RawBody: p.Text, MetadataJSON: string(meta), Status: status.Recorded,
	})
	if errors.Is(err, journal.ErrDuplicate) {
		existing, gerr := s.h.Ledger.Get(ctx, p.ID)
		if gerr == nil && existing.Status == status.Acked {
			return fmt.Errorf("part %s: %w", p.ID, telegram.ErrPartDelivered)
		}
		return nil // recorded earlier but not delivered: send it again
	}
	return err
}

func (s telegramStore) FinishPart(ctx context.Context, partID string, ok bool, reason string) error {
	// A part is recorded before the API call; Telegram's answer settles it.
	c := journal.TelegramPartSent(partID)
	if !ok {
		c = journal.SendFailed(partID, status.CodeTelegramFailed, reason)
	}
	_, err := s.h.Ledger.Advance(ctx, c)
	return err
}

// RecordRefused keeps an update from a chat that is not allowed in as a
// row the hub only recorded (status recorded, error_code
// chat_not_allowed): never routed, so no role sees it (journal.Reader) and
// only the operator can read it.
func (s telegramStore) RecordRefused(ctx context.Context, in telegram.Inbound) error {
	return recordRefusedUpdate(ctx, s.h, in, status.CodeChatNotAllowed)
}

// recordRefusedUpdate records an update the hub refused as
// telegram-refused-<update_id>, user → user (the human who runs the hub: no
// role's name, whatever the team), status recorded (never routed, seen by
// the operator alone, journal.ForRoles) with the refusal's code; once,
// whatever the retries. Rows of older versions name the architect as
// target: their status keeps them from it all the same.
func recordRefusedUpdate(ctx context.Context, h *Hub, in telegram.Inbound, code status.Code) error {
	meta, _ := json.Marshal(map[string]any{"chatId": in.ChatID, "sender": in.Sender, "updateId": in.UpdateID})
	_, err := h.Ledger.Append(ctx, &journal.Message{
		MessageID: msgid.TelegramRefused(in.UpdateID), SessionID: h.SessionID(),
		SenderRole: roles.RoleUser, TargetRole: roles.RoleUser, Channel: broker.ChannelTelegram, Direction: "inbound",
		RawBody: in.Text, MetadataJSON: string(meta), Status: status.Recorded, ErrorCode: code,
	})
	if errors.Is(err, journal.ErrDuplicate) {
		return nil
	}
	return err // the relay wraps it with the update id
}
