// This file turns an accepted submission into the ledger row it is stored as.

package broker

import (
	"hm/journal"
	"hm/roles"
)

// ledgerMessage builds the ledger row for s: defaults for priority, channel,
// direction and metadata, and the refs, signals and obligation its body names.
func (b *Broker) ledgerMessage(s Submission, sender string, rt route, seq int64, header, content, body string) *journal.Message {
	now := b.now()
	priority := roles.Priority(s.Priority, body)
	channel := s.Channel
	if channel == "" {
		channel = ChannelWS
	}
	direction := s.Direction
	if direction == "" {
		direction = "outbound"
	}
	meta, _ := metadataJSON(s.Metadata) // queue refused any other
	if s.SessionScoped && sender == roles.RoleSystem {
		meta = sessionScopedMeta
	}
	sent := s.SentAt
	if sent.IsZero() {
		sent = now
	}
	m := &journal.Message{
		MessageID:    s.MessageID,
		SessionID:    b.cfg.SessionID,
		SenderRole:   sender,
		TargetRole:   rt.name,
		Channel:      channel,
		Direction:    direction,
		Seq:          seq,
		Header:       header,
		Priority:     priority,
		SentAtMs:     sent.UnixMilli(),
		BrokeredAtMs: now.UnixMilli(),
		RawBody:      content,
		MetadataJSON: meta,
	}
	// A reference answers an obligation or resolves a TASK/BLOCKER only
	// when an agent or the human writes it: the hub's own messages name
	// refs to remind of them (RemindOnce), never to answer them.
	if sender != roles.RoleSystem {
		m.Refs = roles.Refs(body)
	}
	for _, sg := range roles.Signals(body) {
		m.Signals = append(m.Signals, journal.Signal{Kind: sg.Kind, Text: sg.Text})
	}
	if s.AckRequired || roles.HasTag(body, roles.TagAckRequired) {
		if len(rt.members) == 1 {
			m.Obligation = &journal.Obligation{
				OwnerRole:     rt.members[0].Role,
				RequesterRole: sender,
				Ref:           roles.Header{Role: header, Seq: seq}.Ref(),
			}
		}
	}
	return m
}
