// This file sends obligation reminders for [ACK REQUIRED] messages.

package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hm/broker/proto"
	"hm/internal/msgid"
	"hm/roles"
)

// RunReminders sends one reminder for each [ACK REQUIRED] obligation left
// open for ReminderAfter, until ctx ends.
func (b *Broker) RunReminders(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		b.RemindOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RemindOnce sends the due reminders now (RunReminders calls it on a tick).
// Only this session's obligations are reminded: an earlier session's ref
// ("ARCH #1") names another message now that numbers started again, and
// no reply in this session closes it; the briefing lists it instead.
func (b *Broker) RemindOnce(ctx context.Context) {
	obs, err := b.deps.Ledger.OpenObligations(ctx, b.cfg.ReminderAfter.Milliseconds())
	if err != nil {
		b.log.Warn("list obligations", "err", err)
		return
	}
	for _, o := range obs {
		if o.RemindedAtMs != 0 || o.SessionID != b.cfg.SessionID {
			continue
		}
		text := fmt.Sprintf("Reminder: %s asked for an acknowledgement %s ago. Reply with a message that references %s.",
			o.Ref, b.now().Sub(time.UnixMilli(o.OpenedAtMs)).Round(time.Minute), o.Ref)
		_, err := b.Submit(ctx, Submission{From: roles.RoleSystem, Target: o.OwnerRole, Content: text, Channel: ChannelSystem,
			MessageID: msgid.Reminder(o.MessageID), HubID: true, SessionScoped: true})
		if err != nil && !errors.Is(err, proto.ErrNoRoute) {
			b.log.Warn("send reminder", "obligation", o.MessageID, "err", err)
			continue
		}
		if err := b.deps.Ledger.MarkReminded(ctx, o.MessageID); err != nil {
			b.log.Warn("mark reminded", "obligation", o.MessageID, "err", err)
		}
		if b.deps.Notices != nil {
			b.deps.Notices.Reminded(o)
		}
	}
}
