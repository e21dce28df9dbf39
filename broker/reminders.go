// This file sends obligation reminders for [ACK REQUIRED] messages.

package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/msgid"
	"hm/internal/ground/periodic"
	"hm/roles"
)

// RunReminders sends one reminder for each [ACK REQUIRED] obligation left
// open for ReminderAfter, until ctx ends. Its timer runs only while an
// obligation of this session waits for its reminder: it looks once every
// has passed after start (for the obligations an earlier hub of the
// session left), when an
// [ACK REQUIRED] message commits (remindKick), and then at the next
// obligation's due time; calls are at least every apart. With none open
// it sleeps (#36).
func (b *Broker) RunReminders(ctx context.Context, every time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.ctx, cancel)()
	b.remindKick.Kick()
	periodic.Armed(ctx, b.remindKick, every, func() time.Duration { return b.remind(ctx) })
}

// RemindOnce sends the due reminders now (RunReminders calls it when an
// obligation falls due).
func (b *Broker) RemindOnce(ctx context.Context) { b.remind(ctx) }

// remind sends the due reminders and returns how long until the next
// obligation falls due (0: none waits for one). Only this session's
// obligations are reminded: an earlier session's ref ("ARCH #1") names
// another message now that numbers started again, and no reply in this
// session closes it; the briefing lists it instead. A reminder that could
// not be sent is tried again.
func (b *Broker) remind(ctx context.Context) time.Duration {
	b.remindRounds.Add(1)
	obs, err := b.deps.Ledger.OpenObligations(ctx, 0)
	if err != nil {
		b.log.Warn("list obligations", "err", err)
		return b.cfg.ReminderAfter
	}
	var next time.Duration
	arm := func(d time.Duration) {
		if next <= 0 || d < next {
			next = d
		}
	}
	now := b.now()
	for _, o := range obs {
		if o.RemindedAtMs != 0 || o.SessionID != b.cfg.SessionID {
			continue
		}
		if left := time.UnixMilli(o.OpenedAtMs).Add(b.cfg.ReminderAfter).Sub(now); left > 0 {
			arm(left)
			continue
		}
		text := fmt.Sprintf("Reminder: %s asked for an acknowledgement %s ago. Reply with a message that references %s.",
			o.Ref, now.Sub(time.UnixMilli(o.OpenedAtMs)).Round(time.Minute), o.Ref)
		_, err := b.Submit(ctx, Submission{From: roles.RoleSystem, Target: o.OwnerRole, Content: text, Channel: ChannelSystem,
			MessageID: msgid.Reminder(o.MessageID), HubID: true, SessionScoped: true})
		if err != nil && !errors.Is(err, proto.ErrNoRoute) {
			b.log.Warn("send reminder", "obligation", o.MessageID, "err", err)
			arm(b.cfg.ReminderAfter)
			continue
		}
		if err := b.deps.Ledger.MarkReminded(ctx, o.MessageID); err != nil {
			b.log.Warn("mark reminded", "obligation", o.MessageID, "err", err)
			arm(b.cfg.ReminderAfter)
		}
		if b.deps.Notices != nil {
			b.deps.Notices.Reminded(o)
		}
	}
	return next
}
