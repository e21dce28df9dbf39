package journal

import (
	"encoding/json"
	"strconv"
	"strings"

	"hm/internal/ground/status"
)

// Directions (comms_journal.direction).
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// Signal kinds (comms_signals.kind).
const (
	SignalDecision = "DECISION"
	SignalTask     = "TASK"
	SignalFinding  = "FINDING"
	SignalBlocker  = "BLOCKER"
)

// Message is one comms_journal row: a message and its current state. Its
// JSON field names are the column names.
//
// Signals, Obligation and Refs are write-only inputs for Append: they are
// processed inside the same transaction as the row itself and are never
// filled when a row is read back.
type Message struct {
	RowID        int64         `json:"row_id"`
	MessageID    string        `json:"message_id"`
	SessionID    string        `json:"session_id"`
	SenderRole   string        `json:"sender_role"`
	TargetRole   string        `json:"target_role"`
	Channel      string        `json:"channel"`
	Direction    string        `json:"direction"`
	Seq          int64         `json:"seq"` // 0 = none (stored as NULL)
	Header       string        `json:"header"`
	Priority     string        `json:"priority"`
	SentAtMs     int64         `json:"sent_at_ms"` // 0 = unknown (stored as NULL)
	BrokeredAtMs int64         `json:"brokered_at_ms"`
	RawBody      string        `json:"raw_body"`
	BodyHash     string        `json:"body_hash"`
	BodyBytes    int64         `json:"body_bytes"`
	Status       status.Status `json:"status"`
	AckStatus    status.Stage  `json:"ack_status"`
	ErrorCode    status.Code   `json:"error_code"`
	Attempt      int64         `json:"attempt"`
	MetadataJSON string        `json:"metadata_json"`
	UpdatedAtMs  int64         `json:"updated_at_ms"`

	// Signals become comms_signals rows with ref = Header+" #"+Seq.
	Signals []Signal `json:"-"`
	// Obligation, when set, opens a comms_obligations row for this message.
	Obligation *Obligation `json:"-"`
	// Refs are the "HEADER #N" references made by this message. In the same
	// session they close open obligations owned by SenderRole with that ref,
	// and resolve TASK and BLOCKER signals with that ref.
	Refs []string `json:"-"`
}

// Ref returns the message's own reference, "HEADER #N" (upper-case header),
// or "" when it has no header or sequence number.
func (m Message) Ref() string {
	if m.Header == "" || m.Seq == 0 {
		return ""
	}
	return strings.ToUpper(m.Header) + " #" + strconv.FormatInt(m.Seq, 10)
}

// Delivery is how far the message got, in the plain words a person reads
// (status.PlainStages): its stage's words, or "failed". The one
// rule behind hm comms history and search, the handoff and the briefing;
// the stage names stay in the columns and in --json.
func (m Message) Delivery() string {
	switch {
	case m.Status == status.Failed:
		return "failed"
	case m.AckStatus != status.StageNone:
		return m.AckStatus.Plain()
	case m.Status == status.Recorded:
		return "recorded, never routed"
	case m.Status == status.Routed:
		return "handed over"
	case m.Status == status.Acked:
		return status.DeliveredVerified.Plain()
	}
	return status.StageNone.Plain()
}

// ToVerify is what would take the message to "seen by the agent"
// (status.Stage.ToVerify), "" once it is there or when it failed: the one
// rule behind hm comms history's notes and hm status.
func (m Message) ToVerify() string {
	if m.Status == status.Failed {
		return ""
	}
	return m.AckStatus.ToVerify()
}

// row returns a copy without the write-only extras.
func (m Message) row() Message {
	m.Signals, m.Obligation, m.Refs = nil, nil, nil
	return m
}

// Signal is one comms_signals row: a tagged line (DECISION:, TASK:, FINDING:,
// BLOCKER:) of a message. Only Kind and Text are read by Append.
type Signal struct {
	SignalID   int64  `json:"signal_id"`
	MessageID  string `json:"message_id"`
	SessionID  string `json:"session_id"`
	SenderRole string `json:"sender_role"`
	Ref        string `json:"ref"`
	Kind       string `json:"kind"`
	Text       string `json:"text"`
	AtMs       int64  `json:"at_ms"`
	ResolvedBy string `json:"resolved_by"` // message_id of the resolving message, "" = open
}

// Obligation is one comms_obligations row: an [ACK REQUIRED] message that its
// target (OwnerRole) must answer by referencing Ref. Only OwnerRole,
// RequesterRole and Ref are read by Append (Ref defaults to the message's own
// "HEADER #N").
type Obligation struct {
	ObligationID  int64  `json:"obligation_id"`
	MessageID     string `json:"message_id"`
	SessionID     string `json:"session_id"`
	OwnerRole     string `json:"owner_role"`
	RequesterRole string `json:"requester_role"`
	Ref           string `json:"ref"`
	OpenedAtMs    int64  `json:"opened_at_ms"`
	RemindedAtMs  int64  `json:"reminded_at_ms"` // 0 = never reminded
	ClosedBy      string `json:"closed_by"`      // message_id that closed it, "" = open
	ClosedAtMs    int64  `json:"closed_at_ms"`
}

// Change is a requested state change for Advance. Empty fields request
// nothing; see Merge for how it combines with the current row.
type Change struct {
	MessageID string
	Status    status.Status
	AckStatus status.Stage
	// ErrorCode is stored only when this change moves the status to failed.
	ErrorCode status.Code
	// Event names the event row; when set, an event is written even if the
	// row does not change. When empty a name is derived from what changed.
	Event status.Event
	// Detail is merged into the event's detail_json.
	Detail     map[string]any
	IncAttempt bool
	// AtMs is the time of the change; 0 = now.
	AtMs int64
}

// Event is a committed comms_events row as delivered to subscribers, with
// the message row as it stood after the event.
type Event struct {
	EventID   int64           `json:"event_id"`
	MessageID string          `json:"message_id"`
	Event     status.Event    `json:"event"`
	AtMs      int64           `json:"at_ms"`
	Detail    json.RawMessage `json:"detail"`
	Row       Message         `json:"row"`
}

// Merge applies c to cur monotonically and reports whether anything changed.
//
// The status changes only to a higher StatusRank, so a later failure never
// overwrites routed or acked while proof of delivery may overwrite failed.
// ErrorCode is taken from c only when the change to failed is applied (it is
// kept afterwards as the last failure reason). AckStatus changes only to a
// higher AckRank. IncAttempt adds one to Attempt. When something changed,
// UpdatedAtMs becomes c.AtMs (if non-zero). Merge is pure.
func Merge(cur Message, c Change) (Message, bool) {
	out := cur
	changed := false
	if c.Status != "" && c.Status.Rank() > cur.Status.Rank() {
		out.Status = c.Status
		changed = true
		if c.Status == status.Failed && c.ErrorCode != "" {
			out.ErrorCode = c.ErrorCode
		}
	}
	if c.AckStatus != "" && c.AckStatus.Rank() > cur.AckStatus.Rank() {
		out.AckStatus = c.AckStatus
		changed = true
	}
	if c.IncAttempt {
		out.Attempt++
		changed = true
	}
	if changed && c.AtMs != 0 {
		out.UpdatedAtMs = c.AtMs
	}
	return out, changed
}

// NormalizeRef canonicalises a "HEADER #N" reference: the header is
// upper-cased and trimmed, exactly one space precedes '#', and N loses
// leading zeros. Strings that are not references are returned upper-cased
// and trimmed.
func NormalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	i := strings.LastIndexByte(ref, '#')
	if i < 0 {
		return strings.ToUpper(ref)
	}
	head := strings.ToUpper(strings.TrimSpace(ref[:i]))
	num := strings.TrimSpace(ref[i+1:])
	if n, err := strconv.ParseInt(num, 10, 64); err == nil && n >= 0 {
		num = strconv.FormatInt(n, 10)
	}
	return head + " #" + num
}
