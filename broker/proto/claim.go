package proto

// Claim frames: how a CLI hook (`hm hook`) takes the messages queued for
// its pane that the pane has not begun to type, to put them in the agent's
// context instead (docs/protocol.md §14). A claim is a lease: the hook
// prints what it was given, then names in claim-ack the messages it
// emitted; those are recorded delivered.context, and every other message
// of the lease goes back to the pane's queue to be typed.
const (
	// TypeClaim takes messages: payload ClaimRequest, answered with a
	// response whose result is a ClaimResult.
	TypeClaim = "claim"
	// TypeClaimAck ends the connection's leases: payload ClaimAck,
	// answered with a response whose result is a ClaimAckResult.
	TypeClaimAck = "claim-ack"
)

// Claim limits.
const (
	DefaultClaimMax = 10 // messages a claim takes when max is absent or 0
	MaxClaim        = 50 // the most one claim takes
)

// ClaimRequest is a claim frame's payload.
type ClaimRequest struct {
	// Max caps the messages taken (default DefaultClaimMax, at most
	// MaxClaim); -1 takes none (the session context alone).
	Max int `json:"max,omitempty"`
	// Session asks for the role's session context as well.
	Session bool `json:"session,omitempty"`
	// Hook names the caller for the ledger, e.g. "claude UserPromptSubmit".
	Hook string `json:"hook,omitempty"`
	// State is the pane state the hook event tells (ready, busy,
	// waiting_for_human; docs/protocol.md § "Liveness"), recorded for the
	// role's pane before anything is claimed.
	State string `json:"state,omitempty"`
	// WaitMs, when nothing is claimable at once, holds the claim open up
	// to that long (at most MaxClaimWaitMs) until a message is: Claude
	// Code's asyncRewake Stop hook (`hm hook claude Stop --wait`) waits so
	// for a message to wake its idle session with. One claim waits per
	// role; a newer one, or a hook of the role reporting busy, releases it
	// (ClaimResult.Released).
	WaitMs int64 `json:"waitMs,omitempty"`
	// MidTurn: the hook puts what it takes into the turn under way (a
	// tool or stop hook, the waiting Stop hook), not into a new prompt.
	// While an interrupt the pane sent is in flight such a claim takes
	// nothing: the turn may be the cancelled one, whose hook output the
	// CLI drops (docs/protocol.md §14, the claim rule).
	MidTurn bool `json:"midTurn,omitempty"`
	// WaitSinceMs (Unix ms) is when the waiting hook's stop happened: a
	// hook of the role that reported busy after it means the agent went
	// back to work before this claim arrived, and the claim is released
	// at once (busy) instead of waiting through that turn.
	WaitSinceMs int64 `json:"waitSinceMs,omitempty"`
	// SessionID is the CLI's own session id from the hook's input
	// (session_id): the role's pane records it and, when its program
	// dies, starts the profile's resume form with it instead of a blank
	// program (docs/protocol.md, "Restarts and resumes").
	SessionID string `json:"sessionId,omitempty"`
}

// MaxClaimWaitMs caps ClaimRequest.WaitMs: a day.
const MaxClaimWaitMs = 24 * 60 * 60 * 1000

// Released says why a waiting claim ended without messages.
type Released string

// Why a waiting claim ended empty.
const (
	ReleasedTimeout    Released = "timeout"    // WaitMs passed
	ReleasedSuperseded Released = "superseded" // a newer claim of the role waits
	ReleasedBusy       Released = "busy"       // a hook of the role reported it busy
)

// PaneStateBusy is the hook-reported state (ClaimRequest.State) that
// releases the role's waiting claim: its agent is at work again.
const PaneStateBusy = "busy"

// ClaimedMessage is one message taken from the pane's queue.
type ClaimedMessage struct {
	MessageID string `json:"messageId"`
	// Text is the message as the agent's context shows it: the typing's
	// "[AGENT MSG - reply via hm-send] " prefix, the content (header
	// included) with its lines as they are, and the "[hm:<id>]" trailer;
	// a body over 4 KiB is a pointer line to the file that holds it.
	Text   string `json:"text"`
	Urgent bool   `json:"urgent,omitempty"`
}

// SessionContext is what an agent starting (or restarting, or after its
// context was compacted) needs to know of its place in the session.
type SessionContext struct {
	SessionID string `json:"sessionId"`
	Role      string `json:"role"`
	Header    string `json:"header"`
	// Line is the session line every pane's first message starts with:
	// "# SQUIDRUN SESSION: Builder - Started 2026-11-24".
	Line string `json:"line"`
	// Brief is the role's brief (its job, how to talk to the team).
	Brief string `json:"brief"`
	// StartID is the id of this session's first message to the role (its
	// session line, brief and briefing pointer), which a claim may take.
	StartID string `json:"startId"`
}

// ClaimResult answers a claim.
type ClaimResult struct {
	// Role is the registered role whose pane the messages were taken from.
	Role     string           `json:"role"`
	Messages []ClaimedMessage `json:"messages"`
	// Session is set when the claim asked for it and the role is a team
	// member.
	Session *SessionContext `json:"session,omitempty"`
	// LeaseMs is how long the hub waits for the claim-ack before it gives
	// the messages back to the pane (a closed connection gives them back at
	// once).
	LeaseMs int64 `json:"leaseMs"`
	// Released is set when a waiting claim (WaitMs) ended with no
	// messages, and says why.
	Released Released `json:"released,omitempty"`
}

// ClaimAck is a claim-ack frame's payload: the claimed messages the hook
// emitted into the agent's context.
type ClaimAck struct {
	MessageIDs []string `json:"messageIds"`
	// State, when set, is the pane's state now that the hook printed what
	// it names, reported as ClaimRequest.State is: a stop hook that
	// printed messages blocked the stop (or woke the session), so the
	// agent is at work on them ("busy"), not "ready" as its claim said.
	State string `json:"state,omitempty"`
}

// ClaimAckResult answers a claim-ack.
type ClaimAckResult struct {
	// Delivered were recorded delivered.context.
	Delivered []string `json:"delivered"`
	// Returned were held and not named: back in the pane's queue.
	Returned []string `json:"returned"`
	// Unknown were named but not held by this connection (never claimed,
	// or their lease had ended): nothing was recorded for them.
	Unknown []string `json:"unknown,omitempty"`
}
