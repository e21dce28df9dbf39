// Package notify decides what deserves telling the person at the machine
// and tells them, without Telegram (issue #34): a message to `user`, one
// that asks for their answer ([ACK REQUIRED]), an answer an agent owes
// them that is overdue, a pane waiting for a person, a message stuck at a
// pane. It is the one place of that rule: the broker and the hub report
// what happened (Notifier.Routed, Stuck, Reminded, Waiting.Observe) and
// this package makes the Events, each once (Event.Key, kept in the ledger
// across restarts), for its sinks: a desktop notifier command, a bell and
// OSC 9 in the hub's terminal, the cockpit (Notifier.Recent) and, for a
// waiting pane, the hub's Telegram line.
package notify

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"hm/journal"
	"hm/roles"
)

// Kind is what an Event is about.
type Kind string

// Kinds of Event.
const (
	// KindMessage: a message to the person (target `user`).
	KindMessage Kind = "message"
	// KindAckRequired: a message to the person that asks for their
	// answer ([ACK REQUIRED]).
	KindAckRequired Kind = "ack_required"
	// KindOwed: an agent has not answered the person's [ACK REQUIRED]
	// message by its reminder time (SPEC §10: 10 minutes).
	KindOwed Kind = "owed"
	// KindWaiting: a pane has waited for a person (waiting_for_human)
	// for the team's notice time.
	KindWaiting Kind = "waiting_for_human"
	// KindStuck: a pane could not get a message submitted.
	KindStuck Kind = "stuck"
)

// Event is one thing to tell the person.
type Event struct {
	// Key names the event; an event is told once per Key, across
	// restarts (docs/protocol.md, "Notifications").
	Key  string `json:"key"`
	Kind Kind   `json:"kind"`
	// Title and Body are a desktop notification's; Line is the same in
	// one sentence, for a terminal or a chat.
	Title string `json:"title"`
	Body  string `json:"body"`
	Line  string `json:"line"`
	// Role is the pane or sender concerned; MessageID the message, if
	// any.
	Role      string `json:"role,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	AtMs      int64  `json:"atMs"`
	// Seq numbers the events this hub told, from 1 (the cockpit's
	// cursor); 0 until told.
	Seq int64 `json:"seq"`
}

// bodyChars bounds the message text shown in a notification.
const bodyChars = 200

// ForMessage is the event a routed message deserves: one to the person
// from an agent (the hub's own notices to the person are about events
// told on their own, such as a stuck message).
func ForMessage(m journal.Message) (Event, bool) {
	if m.TargetRole != roles.RoleUser || m.SenderRole == roles.RoleSystem || m.SenderRole == roles.RoleUser {
		return Event{}, false
	}
	from := fromOf(m)
	_, body, ok := roles.ParseHeader(m.RawBody)
	if !ok {
		body = m.RawBody
	}
	ev := Event{Key: "message:" + m.MessageID, Kind: KindMessage, Role: m.SenderRole, MessageID: m.MessageID,
		Title: "hm: " + from + " wrote to you", Body: clip(body), AtMs: m.BrokeredAtMs}
	if roles.HasTag(body, roles.TagAckRequired) {
		ev.Kind, ev.Title = KindAckRequired, "hm: "+from+" asks for your answer"
	}
	ev.Line = ev.Title + ": " + ev.Body
	return ev, true
}

// ForStuck is the event of a message stuck at role's pane for reason.
func ForStuck(m journal.Message, role, reason string, at time.Time) Event {
	what := m.MessageID
	if ref := m.Ref(); ref != "" {
		what = ref
	}
	body := clip(fmt.Sprintf("%s → %s: %s. hm status lists it; hm attach %s shows the pane.", what, role, reason, role))
	return Event{Key: "stuck:" + m.MessageID, Kind: KindStuck, Role: role, MessageID: m.MessageID,
		Title: "hm: a message is stuck at " + role, Body: body, Line: "hm: stuck: " + body, AtMs: at.UnixMilli()}
}

// ForReminded is the event an obligation's reminder deserves: one the
// person is owed (they asked with [ACK REQUIRED]) and the owner has not
// answered in time.
func ForReminded(o journal.Obligation, at time.Time) (Event, bool) {
	if o.RequesterRole != roles.RoleUser {
		return Event{}, false
	}
	age := at.Sub(time.UnixMilli(o.OpenedAtMs)).Round(time.Minute)
	body := clip(fmt.Sprintf("%s has not answered your %s for %s (hm status lists open obligations).", o.OwnerRole, o.Ref, age))
	return Event{Key: "owed:" + o.MessageID, Kind: KindOwed, Role: o.OwnerRole, MessageID: o.MessageID,
		Title: "hm: " + o.OwnerRole + " owes you an answer", Body: body, Line: "hm: " + body, AtMs: at.UnixMilli()}, true
}

// fromOf names a message's sender for a title: "ARCH #4 (architect)".
func fromOf(m journal.Message) string {
	if ref := m.Ref(); ref != "" {
		return ref + " (" + m.SenderRole + ")"
	}
	return m.SenderRole
}

// clip is s on one line, without control characters (a notification's
// text reaches a terminal: no escape sequence of an agent's may), at most
// bodyChars characters.
func clip(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) <= bodyChars {
		return s
	}
	r := []rune(s)
	return string(r[:bodyChars-1]) + "…"
}
