// Package status is the one place where hm spells the words its protocol and
// its ledger share: message statuses, delivery stages, refusal and error
// codes, and the names of ledger events. Every other package uses these typed
// constants; none writes the strings itself.
package status

import "slices"

// Status is a message's routing status (comms_journal.status, SPEC §9). It
// only moves to a higher Rank: a later failure never overwrites routed or
// acked, while proof of delivery may overwrite failed.
type Status string

// Message statuses, in rank order.
const (
	Recorded Status = "recorded" // recorded by the hub, never routed (e.g. a refused Telegram update)
	Brokered Status = "brokered" // committed by the hub, not yet handed over
	Failed   Status = "failed"   // could not be handed over (ErrorCode says why)
	Routed   Status = "routed"   // handed to a pane, a listener or Telegram
	Acked    Status = "acked"    // proof of receipt
)

// Statuses lists every Status in rank order.
var Statuses = []Status{Recorded, Brokered, Failed, Routed, Acked}

// Rank orders statuses: recorded 0, brokered 1, failed 2, routed 3, acked 4.
// Anything else (including "") ranks -1.
func (s Status) Rank() int {
	for i, v := range Statuses {
		if s == v {
			return i
		}
	}
	return -1
}

// Stage is a delivery stage: the ledger's ack_status and, on success, the
// status a send-ack reports (SPEC §5.3).
type Stage string

// Delivery stages, in rank order (see Stage.Rank). FallbackTriggered is
// reported by hm-send alone and never stored.
const (
	StageNone Stage = ""
	// AcceptedQueuedRemote: committed, for a role another hub hosts, and
	// not yet in JetStream (NATS unreachable): the hub's outbox publishes
	// it when NATS is back (docs/protocol.md §16).
	AcceptedQueuedRemote Stage = "accepted.queued_remote"
	AcceptedUnverified   Stage = "accepted.unverified" // committed and queued or typed; no proof yet
	Typed                Stage = "typed"               // visibly at the program's input
	Stuck                Stage = "stuck"               // repeated attempts did not get it submitted
	Submitted            Stage = "submitted"           // the screen shows it left the input area
	DeliveredWebSocket   Stage = "delivered.websocket" // handed to a listener
	DeliveredContext     Stage = "delivered.context"   // a CLI hook emitted it as context
	DeliveredVerified    Stage = "delivered.verified"  // the target acknowledged it
	FallbackTriggered    Stage = "fallback.triggered"  // hm-send wrote a trigger file instead
)

// Stages lists the stages the ledger stores, in rank order.
var Stages = []Stage{StageNone, AcceptedQueuedRemote, AcceptedUnverified, Typed, Stuck, Submitted, DeliveredWebSocket, DeliveredContext, DeliveredVerified}

// Rank orders the stored stages as Stages lists them ("" is 0). A stage the
// ledger does not store, such as FallbackTriggered, ranks -1.
func (s Stage) Rank() int {
	for i, v := range Stages {
		if s == v {
			return i
		}
	}
	return -1
}

// Delivered reports whether s is a definitive success stage (delivered.*).
func (s Stage) Delivered() bool {
	return s == DeliveredWebSocket || s == DeliveredContext || s == DeliveredVerified
}

// Code is a refusal or error code: the send-ack's error, an error frame's
// code, a background-slot refusal's status, or the ledger's error_code.
type Code string

// Refusal and error codes named by SPEC §5.2, §5.3 and §8.
const (
	CodeInvalidTarget         Code = "invalid_target"
	CodeOwnerBindingViolation Code = "owner_binding_violation"
	CodeRoleMismatch          Code = "role_mismatch"
	CodeUnauthorized          Code = "unauthorized"
	CodeNotRegistered         Code = "not_registered"
	CodeTooLarge              Code = "too_large"
	CodeRateLimited           Code = "rate_limited"
	CodeEmptyContent          Code = "empty_content"
	CodeNoRoute               Code = "no_route"
	CodeTelegramUnconfigured  Code = "telegram_unconfigured"
	CodeJournalUnavailable    Code = "journal_unavailable"
	CodeDuplicateID           Code = "duplicate_id"
	CodeReservedID            Code = "reserved_id"
	CodeBadHeader             Code = "bad_header"
	CodeUnknownType           Code = "unknown_type"
	CodeBadJSON               Code = "bad_json"
	CodeBadRequest            Code = "bad_request"
	CodeExpiredSession        Code = "expired_session"
	CodeCapacityReached       Code = "capacity_reached"
	CodeSlotUnavailable       Code = "slot_unavailable"
	CodeNotRunning            Code = "not_running"
	CodeNotFound              Code = "not_found" // a query names a message the caller may not read (unknown, or not its own)
	CodeInternal              Code = "internal"
)

// Refusal codes of trigger files (SPEC §7), written to rejected/*.reason.
const (
	CodeNotRegular   Code = "not_regular"    // a symlink, FIFO, device, socket or directory with a trigger name
	CodeLinked       Code = "multiple_links" // a hard link (link count above one)
	CodeForeignOwner Code = "foreign_owner"  // not owned by the hub's user
	CodeUnreadable   Code = "unreadable"     // a regular file the hub may not open (permission denied)
	CodeBadSignature Code = "bad_signature"  // an [HM-SIG:] line that does not verify
	CodeUnsigned     Code = "unsigned"       // no signature while triggers.allowUnsigned is false
	CodeRejected     Code = "rejected"       // a refusal without a more specific code
)

// Error codes the hub records in comms_journal.error_code for its own
// failures (not sent as refusals).
const (
	CodePaneFailed     Code = "pane_failed"      // the pane could not take the message
	CodeTelegramFailed Code = "telegram_failed"  // the Bot API refused or kept failing
	CodeChatNotAllowed Code = "chat_not_allowed" // a Telegram update from a chat not allowed in
)

// Codes lists every code above.
var Codes = []Code{CodeInvalidTarget, CodeOwnerBindingViolation, CodeRoleMismatch, CodeUnauthorized, CodeNotRegistered,
	CodeTooLarge, CodeRateLimited, CodeEmptyContent, CodeNoRoute, CodeTelegramUnconfigured, CodeJournalUnavailable,
	CodeDuplicateID, CodeReservedID, CodeBadHeader, CodeUnknownType, CodeBadJSON, CodeBadRequest, CodeExpiredSession,
	CodeCapacityReached, CodeSlotUnavailable, CodeNotRunning, CodeNotFound, CodeInternal, CodeNotRegular, CodeLinked, CodeForeignOwner,
	CodeUnreadable, CodeBadSignature, CodeUnsigned, CodeRejected, CodePaneFailed, CodeTelegramFailed, CodeChatNotAllowed}

// Event names a comms_events row: what happened to a message.
type Event string

// Ledger events.
const (
	EventBrokered           Event = "brokered"            // the message row was committed
	EventTyped              Event = "typed"               // typed into a pane, Enter about to be pressed
	EventSubmitted          Event = "submitted"           // Enter pressed into a pane; detail "proven": the program reacted
	EventDelivered          Event = "delivered"           // handed to a listener
	EventShown              Event = "shown"               // shown to the human (target user)
	EventAcked              Event = "acked"               // receipt or message-ack
	EventMerged             Event = "merged"              // a receipt: the submitted prompt held this message and others (detail "with": their ids, "hook")
	EventContext            Event = "context"             // a CLI hook put it in the agent's context (detail "pane", "hook")
	EventAttempt            Event = "attempt"             // another delivery attempt, nothing else changed (detail "error": why, e.g. a pane's program ended mid-typing)
	EventFailed             Event = "failed"              // delivery failed (see error_code)
	EventStuck              Event = "stuck"               // repeated attempts did not get it submitted into a pane (detail "error")
	EventInterrupted        Event = "interrupted"         // the pane's busy program was interrupted (its profile's interrupt keys) for this urgent message (detail "pane")
	EventCleared            Event = "cleared"             // after that interrupt the program's input held text hm did not type; hm erased it before typing this message (detail "pane", "held")
	EventTelegramSent       Event = "telegram_sent"       // the Bot API accepted it
	EventForwarded          Event = "forwarded"           // stored in JetStream for the hub that hosts the target (detail "hub", §16)
	EventQueuedRemote       Event = "queued_remote"       // NATS unreachable: kept in the ledger for the outbox (detail "error", §16)
	EventReceived           Event = "received"            // taken from JetStream for a role this hub hosts (detail "hub": the sender's, §16)
	EventTelegramFailed     Event = "telegram_failed"     // the Bot API refused it
	EventObligationClosed   Event = "obligation_closed"   // an [ACK REQUIRED] was answered
	EventObligationReminded Event = "obligation_reminded" // its one reminder was sent
	EventRepeated           Event = "repeated"            // the same message came again (a trigger file; detail "channel", "file", "messageId": the id it carried) and was not delivered twice
	// EventLedgerKey starts a stretch of the chain hashed with one ledger
	// key (message_id ""): the cut-over from the unkeyed hash of older
	// versions, or a replaced key.
	EventLedgerKey Event = "ledger_key"
)

// PlainStage is how a person reads one delivery stage: the one table of
// the words every human view uses (hm-send, hm comms history, hm status,
// the handoff, the cockpit, which receives it from the hub). The stage
// names themselves stay on the wire and in --json.
type PlainStage struct {
	Stage    Stage  `json:"stage"`
	Words    string `json:"words"`
	ToVerify string `json:"toVerify,omitempty"` // Stage.ToVerify, filled by PlainTable
	// Delivered and NeedsPerson are Stage.Delivered and Stage.NeedsPerson,
	// filled by PlainTable.
	Delivered   bool `json:"delivered,omitempty"`
	NeedsPerson bool `json:"needsPerson,omitempty"`
}

// PlainTable is PlainStages with what would verify each stage and which
// stages are delivered or need a person, as the cockpit receives it (GET
// /ui/api/words) rather than restating it. It is in rank order (the
// order a message passes the stages), FallbackTriggered last.
func PlainTable() []PlainStage {
	t := slices.Clone(PlainStages)
	for i := range t {
		s := t[i].Stage
		t[i].ToVerify, t[i].Delivered, t[i].NeedsPerson = s.ToVerify(), s.Delivered(), s.NeedsPerson()
	}
	return t
}

// NeedsPerson reports whether a message at stage s waits for a person to
// look: it is stuck at a pane.
func (s Stage) NeedsPerson() bool { return s == Stuck }

// PlainStages lists every stage with its plain words, in rank order.
var PlainStages = []PlainStage{
	{Stage: StageNone, Words: "queued"},
	{Stage: AcceptedQueuedRemote, Words: "queued for another hub"},
	{Stage: AcceptedUnverified, Words: "queued"},
	{Stage: Typed, Words: "typed"},
	{Stage: Stuck, Words: "stuck"},
	{Stage: Submitted, Words: "submitted"},
	{Stage: DeliveredWebSocket, Words: "received by its listener"},
	{Stage: DeliveredContext, Words: "in the agent's context"},
	{Stage: DeliveredVerified, Words: "seen by the agent"},
	{Stage: FallbackTriggered, Words: "left for the hub (not running)"},
}

// ToVerify says what would take a message at stage s to "seen by the
// agent", or "" once it is there: a listener's acknowledgement, or for a
// pane the CLI's hooks, which hm init wires.
func (s Stage) ToVerify() string {
	switch s {
	case DeliveredVerified, Stuck, FallbackTriggered:
		return ""
	case DeliveredWebSocket:
		return "seen by the agent once the listener acknowledges it"
	}
	return "seen by the agent once its CLI reports it (hooks: hm init)"
}

// Plain returns the words a person reads for s; a stage not in the table
// reads as its own name.
func (s Stage) Plain() string {
	for _, p := range PlainStages {
		if p.Stage == s {
			return p.Words
		}
	}
	return string(s)
}

// Human is s as a person reads it: its plain words and what would verify
// it, e.g. "queued; seen by the agent once its CLI reports it (hooks: hm
// init)".
func (s Stage) Human() string {
	if v := s.ToVerify(); v != "" {
		return s.Plain() + "; " + v
	}
	return s.Plain()
}
