// Package proto defines hm's WebSocket wire protocol (hm/1): frame shapes,
// error codes and delivery statuses shared by the hub and its clients.
package proto

import (
	"encoding/json"
	"errors"

	"hm/internal/ground/status"
)

// Protocol is the protocol name sent in the welcome frame.
const Protocol = "hm/1"

// Frame size limits (SPEC §5).
const (
	MaxSocketFrame  = 1 << 20   // accepted at the socket
	MaxMessageFrame = 256 << 10 // larger frames get too_large and are dropped
)

// Frame types.
const (
	TypeWelcome             = "welcome"
	TypeRegister            = "register"
	TypeRegistered          = "registered"
	TypeSend                = "send"
	TypeBroadcast           = "broadcast"
	TypeSendAck             = "send-ack"
	TypeHealthCheck         = "health-check"
	TypeHealthCheckResult   = "health-check-result"
	TypeDeliveryCheck       = "delivery-check"
	TypeDeliveryCheckResult = "delivery-check-result"
	TypeHeartbeat           = "heartbeat"
	TypeHeartbeatAck        = "heartbeat-ack"
	TypeBackgroundAgent     = "background-agent"
	TypeResponse            = "response"
	TypeSubscribe           = "subscribe"
	TypeJournalEvent        = "journal-event"
	TypeMessage             = "message"
	TypeMessageAck          = "message-ack"
	TypeError               = "error"
	// TypeQuery asks the hub a read-only question (inbox, search, timeline,
	// get, status); it is answered with a response (query.go).
	TypeQuery = "query"
	// TypeResize is the attach endpoint's text frame that resizes a pane.
	TypeResize = "resize"
)

// Error is a protocol error: a code plus a human explanation. Errors with the
// same code match with errors.Is.
type Error struct {
	Code    status.Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is makes errors.Is(err, ErrX) match on the code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Errorf returns an *Error with code c.
func Errorf(c status.Code, msg string) *Error { return &Error{Code: c, Message: msg} }

// Sentinel errors for the statuses the protocol names.
var (
	ErrInvalidTarget         = &Error{Code: status.CodeInvalidTarget}
	ErrOwnerBindingViolation = &Error{Code: status.CodeOwnerBindingViolation}
	ErrRoleMismatch          = &Error{Code: status.CodeRoleMismatch}
	ErrUnauthorized          = &Error{Code: status.CodeUnauthorized}
	ErrNotRegistered         = &Error{Code: status.CodeNotRegistered}
	ErrTooLarge              = &Error{Code: status.CodeTooLarge}
	ErrRateLimited           = &Error{Code: status.CodeRateLimited}
	ErrEmptyContent          = &Error{Code: status.CodeEmptyContent}
	ErrNoRoute               = &Error{Code: status.CodeNoRoute}
	ErrTelegramUnconfigured  = &Error{Code: status.CodeTelegramUnconfigured}
	ErrJournalUnavailable    = &Error{Code: status.CodeJournalUnavailable}
)

// CodeOf extracts the protocol code of err, or CodeInternal.
func CodeOf(err error) status.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.CodeInternal
}

// MessageOf returns the sentence of err without its code: the Message of a
// wrapped *Error, "" for any other error.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}

// Frame is the union of all frames. Each frame type uses a subset of fields;
// unset fields are omitted on the wire.
type Frame struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`

	// welcome / registered
	ClientID int64  `json:"clientId,omitempty"`
	Proto    string `json:"protocol,omitempty"`

	// register
	Role   string `json:"role,omitempty"`
	Token  string `json:"token,omitempty"`
	Listen bool   `json:"listen,omitempty"`
	// Ack is a listener's ack policy: "" or "message-ack" (at-least-once
	// until message-ack) or "handover" (handed over is done).
	Ack    string `json:"ack,omitempty"`
	PaneID string `json:"paneId,omitempty"`

	// send / broadcast / message
	Target      string          `json:"target,omitempty"`
	Content     string          `json:"content,omitempty"`
	MessageID   string          `json:"messageId,omitempty"`
	Priority    string          `json:"priority,omitempty"`
	AckRequired *bool           `json:"ackRequired,omitempty"`
	WaitMs      int64           `json:"waitMs,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	From        string          `json:"from,omitempty"`
	Seq         int64           `json:"seq,omitempty"`
	Timestamp   int64           `json:"timestamp,omitempty"`

	// health-check
	StaleAfterMs int64 `json:"staleAfterMs,omitempty"`

	// background-agent
	Action  string          `json:"action,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`

	// subscribe
	Topics []string `json:"topics,omitempty"`

	// query: the operation; its parameters are in Payload.
	Op string `json:"op,omitempty"`

	// error
	Code    status.Code `json:"code,omitempty"`
	Message string      `json:"message,omitempty"`
}

// Ack is the send-ack frame.
type Ack struct {
	Type         string   `json:"type"`
	RequestID    string   `json:"requestId,omitempty"`
	MessageID    string   `json:"messageId"`
	OK           bool     `json:"ok"`
	Accepted     bool     `json:"accepted"`
	Verified     bool     `json:"verified"`
	Status       string   `json:"status"`
	Seq          int64    `json:"seq"`
	Header       string   `json:"header"`
	SessionID    string   `json:"sessionId"`
	Warnings     []string `json:"warnings"`
	Dedupe       bool     `json:"dedupe"`
	AckLatencyMs float64  `json:"ackLatencyMs"`
	Error        *string  `json:"error"`
	Reason       string   `json:"reason,omitempty"`
	Targets      []string `json:"targets,omitempty"`
	Target       string   `json:"target,omitempty"`
}

// SetStage reports a success stage as the ACK's status.
func (a *Ack) SetStage(st status.Stage) {
	a.Status = string(st)
	a.Verified = st == status.DeliveredVerified
}

// Stage returns the ACK's status as a delivery stage (a refusal's code is
// not one: its Rank is -1).
func (a Ack) Stage() status.Stage { return status.Stage(a.Status) }

// Refuse makes the ACK a refusal: ok false, status and error the code,
// reason the sentence (kept when empty).
func (a *Ack) Refuse(code status.Code, reason string) {
	c := string(code)
	a.OK, a.Verified = false, false
	a.Status, a.Error = c, &c
	if reason != "" {
		a.Reason = reason
	}
}

// Message is the frame a listener receives.
type Message struct {
	Type      string          `json:"type"`
	From      string          `json:"from"`
	MessageID string          `json:"messageId"`
	Seq       int64           `json:"seq"`
	Content   string          `json:"content"`
	Priority  string          `json:"priority"`
	Metadata  json.RawMessage `json:"metadata"`
	Timestamp int64           `json:"timestamp"`
}

// Registered is the answer to register.
type Registered struct {
	Type     string `json:"type"`
	Role     string `json:"role"`
	PaneID   string `json:"paneId"`
	ClientID int64  `json:"clientId"`
}

// Welcome is the first server frame.
type Welcome struct {
	Type     string `json:"type"`
	ClientID int64  `json:"clientId"`
	Protocol string `json:"protocol"`
}

// ErrorFrame is an error answer.
type ErrorFrame struct {
	Type      string      `json:"type"`
	Code      status.Code `json:"code"`
	Message   string      `json:"message,omitempty"`
	RequestID string      `json:"requestId,omitempty"`
	MessageID string      `json:"messageId,omitempty"`
}

// HealthResult answers health-check.
type HealthResult struct {
	Type             string `json:"type"`
	RequestID        string `json:"requestId,omitempty"`
	Target           string `json:"target"`
	Role             string `json:"role"`
	PaneID           string `json:"paneId"`
	Healthy          bool   `json:"healthy"`
	Status           string `json:"status"`
	LastSeen         int64  `json:"lastSeen"`
	AgeMs            int64  `json:"ageMs"`
	StaleThresholdMs int64  `json:"staleThresholdMs"`
	// Hub is the hub hosting a role another hub hosts (federation, §16).
	Hub   string `json:"hub,omitempty"`
	Error string `json:"error,omitempty"`
}

// DeliveryResult answers delivery-check.
type DeliveryResult struct {
	Type      string        `json:"type"`
	RequestID string        `json:"requestId,omitempty"`
	MessageID string        `json:"messageId"`
	Known     bool          `json:"known"`
	Status    status.Status `json:"status,omitempty"`
	AckStatus status.Stage  `json:"ackStatus,omitempty"`
	ErrorCode status.Code   `json:"errorCode,omitempty"`
	Target    string        `json:"target,omitempty"`
	Seq       int64         `json:"seq,omitempty"`
}

// HeartbeatAck answers heartbeat.
type HeartbeatAck struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	Timestamp int64  `json:"timestamp"`
}

// Response answers background-agent.
type Response struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	OK        bool   `json:"ok"`
	Result    any    `json:"result"`
	Error     string `json:"error,omitempty"`
}

// JournalEvent carries one ledger change to subscribers.
type JournalEvent struct {
	Type string   `json:"type"`
	Row  EventRow `json:"row"`
}

// EventRow is the row of a journal-event frame: one ledger event and the
// message row as it stood after it, in the ledger's column names
// (snake_case). `hm comms tail`, `hm mcp` and the cockpit read this type.
type EventRow struct {
	EventID      int64           `json:"event_id"`
	Event        status.Event    `json:"event"`
	AtMs         int64           `json:"at_ms"`
	Detail       json.RawMessage `json:"detail"`
	MessageID    string          `json:"message_id"`
	SessionID    string          `json:"session_id"`
	SenderRole   string          `json:"sender_role"`
	TargetRole   string          `json:"target_role"`
	Channel      string          `json:"channel"`
	Seq          int64           `json:"seq"`
	Header       string          `json:"header"`
	Priority     string          `json:"priority"`
	RawBody      string          `json:"raw_body"`
	Status       status.Status   `json:"status"`
	AckStatus    status.Stage    `json:"ack_status"`
	ErrorCode    status.Code     `json:"error_code"`
	BrokeredAtMs int64           `json:"brokered_at_ms"`
	// Tags are the tags a view shows for the message (roles.ShownTags):
	// the priority tags after its header, and a priority they do not
	// imply. Absent when none.
	Tags []string `json:"tags,omitempty"`
}
