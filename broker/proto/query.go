package proto

import (
	"encoding/json"

	"hm/internal/ground/status"
)

// Query operations: the op of a query frame. Each takes its parameters in
// the frame's payload (the *Query types below) and is answered with a
// response whose result is the matching *Result type, or with
// error{code, message, requestId}. A query never changes the ledger.
const (
	QueryInbox    = "inbox"
	QuerySearch   = "search"
	QueryTimeline = "timeline"
	QueryGet      = "get"
	QueryStatus   = "status"
)

// QueryOps lists the query operations.
var QueryOps = []string{QueryInbox, QuerySearch, QueryTimeline, QueryGet, QueryStatus}

// Query limits.
const (
	DefaultQueryLimit = 20  // inbox and search, when limit is absent or 0
	MaxQueryLimit     = 200 // inbox and search
	DefaultAround     = 5   // timeline before/after when absent
	MaxAround         = 50  // timeline before/after
	MaxGetIDs         = 50  // get messageIds
	PreviewChars      = 160 // a timeline entry's preview
)

// InboxQuery asks for the messages a role received this session.
type InboxQuery struct {
	// Role is whose inbox: "" is the caller's registered role. Only the
	// operator may name another role.
	Role string `json:"role,omitempty"`
	// SinceSeq is a cursor: only messages after it (a previous answer's
	// cursor). It is a ledger position (row_id), not a header number.
	SinceSeq int64 `json:"sinceSeq,omitempty"`
	// UnreadOnly (default true) keeps messages without proof of receipt.
	UnreadOnly *bool `json:"unreadOnly,omitempty"`
	// Limit caps the messages (default 20, at most 200).
	Limit int `json:"limit,omitempty"`
	// IncludeBodies (default true) returns each message's full body.
	IncludeBodies *bool `json:"includeBodies,omitempty"`
}

// SearchQuery is a full-text search over the bodies the caller may read.
type SearchQuery struct {
	Query   string `json:"query"`             // an FTS5 query: words, "phrases", AND/OR/NOT, prefix*
	Limit   int    `json:"limit,omitempty"`   // default 20, at most 200
	Session string `json:"session,omitempty"` // "app-session-N", N, "current", or "" for every session
	From    string `json:"from,omitempty"`    // sender: a role, header, pane id or alias
	To      string `json:"to,omitempty"`      // target: a role, header, pane id, alias, all or user
}

// TimelineQuery asks for the messages around one, in its session.
type TimelineQuery struct {
	MessageID string `json:"messageId"`
	Before    *int   `json:"before,omitempty"` // default 5, at most 50
	After     *int   `json:"after,omitempty"`  // default 5, at most 50
}

// GetQuery asks for messages in full.
type GetQuery struct {
	MessageIDs []string `json:"messageIds"` // 1 to 50 ids
}

// StatusQuery asks for the team's panes and the caller's obligations and
// unread count.
type StatusQuery struct {
	// Role is whose obligations and unread count: "" is the caller's
	// registered role; only the operator may name another.
	Role string `json:"role,omitempty"`
}

// MessageView is a message as a query shows it.
type MessageView struct {
	MessageID string        `json:"messageId"`
	Cursor    int64         `json:"cursor" jsonschema:"the message's ledger position (row_id); pass the newest seen as since_seq"`
	SessionID string        `json:"sessionId"`
	From      string        `json:"from" jsonschema:"sender role"`
	To        string        `json:"to" jsonschema:"target role, or all / others-<role> / user / telegram"`
	Header    string        `json:"header,omitempty"`
	Seq       int64         `json:"seq,omitempty" jsonschema:"the sender's header number N in (HEADER #N)"`
	Ref       string        `json:"ref,omitempty" jsonschema:"HEADER #N: how a reply references this message"`
	Priority  string        `json:"priority,omitempty"`
	Channel   string        `json:"channel"`
	AtMs      int64         `json:"atMs" jsonschema:"when the hub committed it (unix ms)"`
	Status    status.Status `json:"status"`
	AckStatus status.Stage  `json:"ackStatus,omitempty" jsonschema:"delivery stage; delivered.verified once acknowledged"`
	ErrorCode status.Code   `json:"errorCode,omitempty"`
	Unread    bool          `json:"unread" jsonschema:"the caller's role received it and it has no proof of receipt yet"`
	Bytes     int64         `json:"bytes"`
	Body      string        `json:"body,omitempty" jsonschema:"the full text, its header first; a later line that reads as another message's header is shown quoted with '> '"`
	Snippet   string        `json:"snippet,omitempty" jsonschema:"search: the matching words in [brackets]; timeline: the start of the body"`
	ReplyTo   string        `json:"replyTo,omitempty" jsonschema:"the message this one answers (metadata replyTo)"`
	Tags      []string      `json:"tags,omitempty" jsonschema:"the priority tags after its header, such as [ACK REQUIRED], and a priority they do not imply"`
}

// InboxResult answers an inbox query.
type InboxResult struct {
	Role     string        `json:"role"`
	Messages []MessageView `json:"messages"`
	Cursor   int64         `json:"cursor" jsonschema:"pass as since_seq to read on after these messages"`
	More     bool          `json:"more" jsonschema:"more messages match after cursor"`
	Unread   int           `json:"unread" jsonschema:"unread messages this session in all"`
}

// SearchResult answers a search query: hits newest first, each with a
// snippet and without its body.
type SearchResult struct {
	Hits []MessageView `json:"hits"`
}

// TimelineResult answers a timeline query: the messages around MessageID
// (included), oldest first, each with a preview.
type TimelineResult struct {
	MessageID string        `json:"messageId"`
	Messages  []MessageView `json:"messages"`
}

// EventView is one ledger event of a message.
type EventView struct {
	Event  status.Event    `json:"event"`
	AtMs   int64           `json:"atMs"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// ObligationView is an [ACK REQUIRED] obligation: Owner must answer
// Requester by referencing Ref.
type ObligationView struct {
	MessageID string `json:"messageId"`
	// SessionID is the session the obligation was opened in: the
	// previous session's stay listed for one session (docs/protocol.md
	// "Open obligations").
	SessionID    string `json:"sessionId,omitempty"`
	Owner        string `json:"owner"`
	Requester    string `json:"requester"`
	Ref          string `json:"ref"`
	OpenedAtMs   int64  `json:"openedAtMs"`
	RemindedAtMs int64  `json:"remindedAtMs,omitempty"`
	Open         bool   `json:"open"`
	ClosedBy     string `json:"closedBy,omitempty"`
	ClosedAtMs   int64  `json:"closedAtMs,omitempty"`
}

// MessageDetail is a message in full: body, events, obligation.
type MessageDetail struct {
	MessageView
	Events     []EventView     `json:"events"`
	Obligation *ObligationView `json:"obligation,omitempty"`
}

// GetResult answers a get query. Missing lists the ids the caller may not
// read (unknown, or not its own).
type GetResult struct {
	Messages []MessageDetail `json:"messages"`
	Missing  []string        `json:"missing"`
}

// PaneView is one team member in a status answer.
type PaneView struct {
	Role       string `json:"role"`
	PaneID     string `json:"paneId"`
	Header     string `json:"header"`
	Background bool   `json:"background,omitempty"`
	// Hosted: the hub runs this member's program in a pane.
	Hosted bool `json:"hosted"`
	// State is the pane's state (starting, idle, busy, exited) when hosted,
	// else the member's health (healthy, stale, offline).
	State     string `json:"state"`
	Readiness string `json:"readiness,omitempty" jsonschema:"how the profile reads the pane's screen: ready, busy: <marker>, blocked: <dialog>, not ready"`
	Waiting   string `json:"waiting,omitempty" jsonschema:"why messages wait for a person rather than the program"`
	Queued    int    `json:"queued"`
	Listening bool   `json:"listening" jsonschema:"a WebSocket listener is registered for the role"`
	LastSeen  int64  `json:"lastSeenMs,omitempty"`
}

// StatusResult answers a status query.
type StatusResult struct {
	Role      string     `json:"role"`
	Header    string     `json:"header"`
	PaneID    string     `json:"paneId,omitempty"`
	Operator  bool       `json:"operator"`
	SessionID string     `json:"sessionId"`
	Panes     []PaneView `json:"panes"`
	// Obligations are the open [ACK REQUIRED] messages the role must
	// answer; Awaiting, those others must answer for it.
	Obligations []ObligationView `json:"obligations"`
	Awaiting    []ObligationView `json:"awaiting"`
	Unread      int              `json:"unread"`
}
