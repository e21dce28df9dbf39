package journal

import (
	"errors"
	"fmt"
	"slices"

	"hm/internal/ground/status"
)

// ChangeRule is what one kind of ledger event does to a message row: the
// status it moves the row to ("" = unchanged), the ack stages it may set
// (none = unchanged), the error code it stores, and the detail keys it
// writes (Optional: only when they apply). docs/protocol.md describes the
// same events; changeRules is the one place the code states them, and the
// constructors below are the one way callers build a Change.
type ChangeRule struct {
	Name     string // the constructor
	Event    status.Event
	Status   status.Status
	Stages   []status.Stage
	Codes    []status.Code
	Attempt  bool // counts another delivery attempt
	Keys     []string
	Optional []string
}

// changeRules lists every Change a caller can build, one per constructor.
var changeRules = []ChangeRule{
	{Name: "Typed", Event: status.EventTyped, Stages: []status.Stage{status.Typed}, Keys: []string{"pane"}},
	{Name: "Submitted", Event: status.EventSubmitted, Status: status.Routed, Stages: []status.Stage{status.Submitted, status.AcceptedUnverified}, Keys: []string{"pane", "proven"}},
	{Name: "EnteredBeforeStop", Event: status.EventSubmitted, Status: status.Routed, Stages: []status.Stage{status.AcceptedUnverified}, Keys: []string{"pane", "proven", "from"}},
	{Name: "Attempt", Event: status.EventAttempt, Attempt: true, Keys: []string{"pane", "error"}},
	{Name: "Interrupted", Event: status.EventInterrupted, Keys: []string{"pane"}},
	{Name: "Cleared", Event: status.EventCleared, Keys: []string{"pane", "held"}},
	{Name: "Stuck", Event: status.EventStuck, Stages: []status.Stage{status.Stuck}, Keys: []string{"pane", "error"}},
	{Name: "PaneFailed", Event: status.EventFailed, Status: status.Failed, Codes: []status.Code{status.CodePaneFailed, status.CodeNoRoute}, Keys: []string{"pane", "error"}},
	{Name: "SendFailed", Event: status.EventFailed, Status: status.Failed, Codes: []status.Code{status.CodeTelegramFailed}, Keys: []string{"error"}},
	{Name: "Unroutable", Event: status.EventFailed, Status: status.Failed, Codes: []status.Code{status.CodeNoRoute, status.CodeTelegramUnconfigured}, Keys: []string{"reason"}},
	{Name: "Expired", Event: status.EventFailed, Status: status.Failed, Codes: []status.Code{status.CodeExpiredSession}, Keys: []string{"ageMs"}, Optional: []string{"reason"}},
	{Name: "Shown", Event: status.EventShown, Status: status.Routed, Stages: []status.Stage{status.AcceptedUnverified}},
	{Name: "Delivered", Event: status.EventDelivered, Status: status.Routed, Stages: []status.Stage{status.DeliveredWebSocket}, Keys: []string{"client"}, Optional: []string{"reoffer"}},
	{Name: "Context", Event: status.EventContext, Status: status.Routed, Stages: []status.Stage{status.DeliveredContext}, Keys: []string{"pane"}, Optional: []string{"hook"}},
	{Name: "ContextFromNote", Event: status.EventContext, Status: status.Routed, Stages: []status.Stage{status.DeliveredContext}, Keys: []string{"pane", "hook", "from"}},
	{Name: "Acked", Event: status.EventAcked, Status: status.Acked, Stages: []status.Stage{status.DeliveredVerified}, Keys: []string{"by"}, Optional: []string{"hook"}},
	{Name: "Merged", Event: status.EventMerged, Status: status.Acked, Stages: []status.Stage{status.DeliveredVerified}, Keys: []string{"by", "with"}, Optional: []string{"hook"}},
	{Name: "TelegramSent", Event: status.EventTelegramSent, Status: status.Routed, Stages: []status.Stage{status.DeliveredVerified}},
	{Name: "TelegramPartSent", Event: status.EventTelegramSent, Status: status.Acked, Stages: []status.Stage{status.DeliveredVerified}},
	{Name: "TelegramFailed", Event: status.EventTelegramFailed, Status: status.Routed, Stages: []status.Stage{status.AcceptedUnverified}, Keys: []string{"error"}},
	{Name: "Forwarded", Event: status.EventForwarded, Status: status.Routed, Stages: []status.Stage{status.AcceptedUnverified}, Optional: []string{"hub"}},
	{Name: "ForwardedCopies", Event: status.EventForwarded, Status: status.Routed, Stages: []status.Stage{status.AcceptedUnverified}, Keys: []string{"copies"}},
	{Name: "QueuedRemote", Event: status.EventQueuedRemote, Stages: []status.Stage{status.AcceptedQueuedRemote}, Keys: []string{"error"}},
	{Name: "Received", Event: status.EventReceived, Keys: []string{"hub"}},
	{Name: "Repeated", Event: status.EventRepeated, Keys: []string{"channel", "file", "messageId"}},
}

// ChangeRules returns a copy of the table above.
func ChangeRules() []ChangeRule { return slices.Clone(changeRules) }

// Typed: the text is in a pane's input, Enter about to be pressed.
func Typed(id, pane string) Change {
	return Change{MessageID: id, AckStatus: status.Typed, Event: status.EventTyped, Detail: map[string]any{"pane": pane}}
}

// Submitted: Enter was pressed into pane; proven when the program reacted
// (submitted), else accepted.unverified. The row is routed.
func Submitted(id, pane string, proven bool) Change {
	ack := status.AcceptedUnverified
	if proven {
		ack = status.Submitted
	}
	return Change{MessageID: id, Status: status.Routed, AckStatus: ack, Event: status.EventSubmitted, Detail: map[string]any{"pane": pane, "proven": proven}}
}

// EnteredBeforeStop: the pane's entered log shows Enter was pressed for id
// before the hub last stopped; recorded as an unproven submit.
func EnteredBeforeStop(id, pane string) Change {
	c := Submitted(id, pane, false)
	c.Detail["from"] = "entered log"
	return c
}

// Attempt: another delivery attempt into pane, nothing else changed; err
// says why (e.g. the program ended mid-typing).
func Attempt(id, pane string, err error) Change {
	return Change{MessageID: id, IncAttempt: true, Event: status.EventAttempt, Detail: map[string]any{"pane": pane, "error": err.Error()}}
}

// Interrupted: pane's busy program was interrupted for this urgent message.
func Interrupted(id, pane string) Change {
	return Change{MessageID: id, Event: status.EventInterrupted, Detail: map[string]any{"pane": pane}}
}

// Cleared: after that interrupt pane's input held text hm did not type
// (held, already clipped by the caller), erased before this message.
func Cleared(id, pane, held string) Change {
	return Change{MessageID: id, Event: status.EventCleared, Detail: map[string]any{"pane": pane, "held": held}}
}

// Stuck: repeated attempts did not get id submitted into pane. The status
// is unchanged, so a message never typed stays pending.
func Stuck(id, pane string, err error) Change {
	return Change{MessageID: id, AckStatus: status.Stuck, Event: status.EventStuck, Detail: map[string]any{"pane": pane, "error": err.Error()}}
}

// PaneFailed: the pane (or background slot) of pane could not take id at
// all; code is pane_failed or no_route, errText the error.
func PaneFailed(id string, code status.Code, pane, errText string) Change {
	return Change{MessageID: id, Status: status.Failed, ErrorCode: code, Event: status.EventFailed, Detail: map[string]any{"pane": pane, "error": errText}}
}

// SendFailed: a send to the outside (the Bot API) failed with errText and
// nothing else carries the message.
func SendFailed(id string, code status.Code, errText string) Change {
	return Change{MessageID: id, Status: status.Failed, ErrorCode: code, Event: status.EventFailed, Detail: map[string]any{"error": errText}}
}

// Unroutable: a row left pending by an earlier session has no route now
// (no_route, telegram_unconfigured); reason says why.
func Unroutable(id string, code status.Code, reason string) Change {
	return Change{MessageID: id, Status: status.Failed, ErrorCode: code, Event: status.EventFailed, Detail: map[string]any{"reason": reason}}
}

// Expired: a row an earlier session left fails expired_session; reason is
// set for a lifecycle notice of that session ("" = too old).
func Expired(id string, ageMs int64, reason string) Change {
	d := map[string]any{"ageMs": ageMs}
	if reason != "" {
		d["reason"] = reason
	}
	return Change{MessageID: id, Status: status.Failed, ErrorCode: status.CodeExpiredSession, Event: status.EventFailed, Detail: d}
}

// Shown: a message for the user was shown in the hub's log, with no proof
// anyone read it.
func Shown(id string) Change {
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.AcceptedUnverified, Event: status.EventShown}
}

// Delivered: handed to listener client; reoffer when it was handed to an
// earlier listener and not acknowledged.
func Delivered(id string, client int64, reoffer bool) Change {
	d := map[string]any{"client": client}
	if reoffer {
		d["reoffer"] = true
	}
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredWebSocket, Event: status.EventDelivered, Detail: d}
}

// Context: a CLI hook (hook, "" = unnamed) put id in pane's agent context.
func Context(id, pane, hook string) Change {
	d := map[string]any{"pane": pane}
	if hook != "" {
		d["hook"] = hook
	}
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredContext, Event: status.EventContext, Detail: d}
}

// ContextFromNote: hook put id in pane's agent context under a hub that
// died before the hook's claim-ack reached it; the next hub found it in
// the hook's note (hooknote).
func ContextFromNote(id, pane, hook string) Change {
	c := Context(id, pane, hook)
	c.Detail["hook"] = hook
	c.Detail["from"] = "hook note"
	return c
}

// Acked: a message-ack or a receipt by role by (hook: the receipt's hook,
// "" for none).
func Acked(id, by, hook string) Change {
	d := map[string]any{"by": by}
	if hook != "" {
		d["hook"] = hook
	}
	return Change{MessageID: id, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventAcked, Detail: d}
}

// Merged: a receipt whose prompt held id and the messages with.
func Merged(id, by, hook string, with []string) Change {
	c := Acked(id, by, hook)
	c.Event = status.EventMerged
	c.Detail["with"] = with
	return c
}

// TelegramSent: the Bot API accepted every part of a message for Telegram.
// The message is routed (handed over); each part's own row is the proof
// (TelegramPartSent).
func TelegramSent(id string) Change {
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.DeliveredVerified, Event: status.EventTelegramSent}
}

// TelegramPartSent: the Bot API accepted one outbound part: Telegram's
// answer is the proof of receipt for that part's row (acked).
func TelegramPartSent(partID string) Change {
	return Change{MessageID: partID, Status: status.Acked, AckStatus: status.DeliveredVerified, Event: status.EventTelegramSent}
}

// TelegramFailed: the Bot API refused a message that was also shown to the
// user, so it stays routed.
func TelegramFailed(id string, err error) Change {
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.AcceptedUnverified, Event: status.EventTelegramFailed, Detail: map[string]any{"error": err.Error()}}
}

// Forwarded: stored in JetStream for the hub that hosts the target (hub,
// "" when not known).
func Forwarded(id, hub string) Change {
	d := map[string]any{}
	if hub != "" {
		d["hub"] = hub
	}
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.AcceptedUnverified, Event: status.EventForwarded, Detail: d}
}

// ForwardedCopies: nothing of the message is for this hub; its copies
// (how many) carry it on.
func ForwardedCopies(id string, copies int) Change {
	return Change{MessageID: id, Status: status.Routed, AckStatus: status.AcceptedUnverified, Event: status.EventForwarded, Detail: map[string]any{"copies": copies}}
}

// QueuedRemote: NATS unreachable (err); the row waits for the outbox.
func QueuedRemote(id string, err error) Change {
	return Change{MessageID: id, AckStatus: status.AcceptedQueuedRemote, Event: status.EventQueuedRemote, Detail: map[string]any{"error": err.Error()}}
}

// Received: taken from JetStream, sent by hub.
func Received(id, hub string) Change {
	return Change{MessageID: id, Event: status.EventReceived, Detail: map[string]any{"hub": hub}}
}

// Repeated: the same message came again on channel (a trigger file named
// file carrying messageID) and was not delivered twice.
func Repeated(id, channel, file, messageID string) Change {
	return Change{MessageID: id, Event: status.EventRepeated, Detail: map[string]any{"channel": channel, "file": file, "messageId": messageID}}
}

// check reports how c breaks r, or nil.
func (r ChangeRule) check(c Change) error {
	switch {
	case c.MessageID == "":
		return errors.New("no message id")
	case c.Event != r.Event:
		return fmt.Errorf("event %q, rule says %q", c.Event, r.Event)
	case c.Status != r.Status:
		return fmt.Errorf("status %q, rule says %q", c.Status, r.Status)
	case len(r.Stages) == 0 && c.AckStatus != "", len(r.Stages) > 0 && !slices.Contains(r.Stages, c.AckStatus):
		return fmt.Errorf("ack status %q, rule says one of %q", c.AckStatus, r.Stages)
	case len(r.Codes) == 0 && c.ErrorCode != "", len(r.Codes) > 0 && !slices.Contains(r.Codes, c.ErrorCode):
		return fmt.Errorf("error code %q, rule says one of %q", c.ErrorCode, r.Codes)
	case c.IncAttempt != r.Attempt:
		return fmt.Errorf("attempt %v, rule says %v", c.IncAttempt, r.Attempt)
	}
	for _, k := range r.Keys {
		if _, ok := c.Detail[k]; !ok {
			return fmt.Errorf("detail lacks %q", k)
		}
	}
	for k := range c.Detail {
		if !slices.Contains(r.Keys, k) && !slices.Contains(r.Optional, k) {
			return fmt.Errorf("detail key %q is not in the rule", k)
		}
	}
	return nil
}
