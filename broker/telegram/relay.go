package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"

	"hm/internal/ground/msgid"
	"hm/internal/ground/status"
)

// Sentinel errors.
var (
	// ErrUnconfigured is returned by Send when the relay has no token (or no
	// chat to send to). Its text is the wire status "telegram_unconfigured".
	ErrUnconfigured = errors.New(string(status.CodeTelegramUnconfigured))
	// ErrDeliveryFailed wraps the error of a part Telegram refused (a 4xx
	// other than 429) or that still failed after the bounded retries.
	ErrDeliveryFailed = errors.New("telegram_delivery_failed")
	// ErrEmptyBody is returned by Send for a body with nothing to send.
	ErrEmptyBody = errors.New("telegram: empty body")
	// ErrPartDelivered may be returned (wrapped) by Store.RecordPart for a
	// part that an earlier Send already delivered; Send then skips it, which
	// makes re-sending a parent message idempotent.
	ErrPartDelivered = errors.New("telegram: part already delivered")
	// ErrRunning is returned by Run when the relay is already running.
	ErrRunning = errors.New("telegram: relay already running")
)

// Store is the relay's view of the ledger, implemented by the hub.
type Store interface {
	// KVGet reads a small state value (the relay keeps its update offset
	// there).
	KVGet(ctx context.Context, key string) (string, bool, error)
	// KVSet writes a small state value and returns when it is committed.
	KVSet(ctx context.Context, key, value string) error
	// RecordPart records one outbound part as its own ledger row (message id
	// "<parentID>-part-<i>") and returns when it is committed.
	RecordPart(ctx context.Context, p Part) error
	// FinishPart sets the part's final status: delivered (ok) or failed with
	// reason.
	FinishPart(ctx context.Context, partID string, ok bool, reason string) error
	// RecordRefused records an inbound update from a chat that is not
	// allowed; it is never delivered to a pane.
	RecordRefused(ctx context.Context, in Inbound) error
}

// Part is one outbound Telegram message: a piece of a longer body.
type Part struct {
	ID         string // "<ParentID>-part-<Index>"
	ParentID   string // the message being relayed
	ChatID     string // destination chat
	SenderRole string // the role that sent the parent message
	Text       string // exactly what is sent
	Index      int    // 1-based position
	Total      int    // number of parts of the parent
}

// Inbound is one inbound update from an allowed or a refused chat.
type Inbound struct {
	UpdateID int64
	ChatID   string
	Sender   string    // first name, else username, else chat title
	Text     string    // cleaned text, or media placeholder plus caption
	Date     time.Time // when it was sent (edited: when it was edited)
	Edited   bool      // an edit of an earlier message
}

// MessageID is the ledger message id of the update: "telegram-in-<update_id>".
func (in Inbound) MessageID() string { return msgid.TelegramIn(in.UpdateID) }

// DeliverFunc commits an inbound update to the ledger as message
// "telegram-in-<update_id>" (user -> architect) and queues it to the architect
// pane. It returns only after the commit; an error means nothing was
// committed, and the relay offers the same update again later. Repeats of an
// id must be deduplicated by the implementation. text is already formatted:
// "[Telegram from <sender>]: <text>", with "[delayed: Nm old] " in front when
// the message is older than ten minutes.
type DeliverFunc func(ctx context.Context, in Inbound, text string) error

// Relay states reported in [Status.State].
const (
	StateOff     = "off"     // no token, or Run is not running
	StatePolling = "polling" // connected and long-polling
	StateError   = "error"   // the last request or commit failed; see LastError
)

// Status is a snapshot of the relay for `hm status`.
type Status struct {
	State          string    `json:"state"`
	Bot            string    `json:"bot,omitempty"`       // @username from getMe
	OwnerChat      string    `json:"ownerChat,omitempty"` // see Relay.OwnerChat
	Offset         int64     `json:"offset"`              // next update_id wanted
	LastError      string    `json:"lastError,omitempty"`
	LastErrorAt    time.Time `json:"lastErrorAt,omitzero"`
	LastPollAt     time.Time `json:"lastPollAt,omitzero"` // last successful getUpdates
	LastSendError  string    `json:"lastSendError,omitempty"`
	Inbound        int64     `json:"inbound"`        // updates delivered to the architect
	Refused        int64     `json:"refused"`        // updates from chats not allowed
	Skipped        int64     `json:"skipped"`        // updates with nothing to deliver
	Outbound       int64     `json:"outbound"`       // parts delivered
	OutboundFailed int64     `json:"outboundFailed"` // parts failed
}

// allowedUpdates is what getUpdates asks for; other kinds are skipped anyway.
var allowedUpdates = []string{"message", "edited_message", "channel_post", "edited_channel_post"}

// Relay relays between hm and Telegram. Create it with [New]; run inbound
// polling with [Relay.Run]; send with [Relay.Send]. All methods are safe for
// concurrent use, and safe on a nil *Relay (which is off).
type Relay struct {
	cfg       Config
	log       *slog.Logger
	store     Store
	deliver   DeliverFunc
	api       *bot.Bot
	client    *http.Client
	transport *http.Transport // non-nil when the relay owns it
	base      string
	allowed   map[string]bool
	offsetKey string
	now       func() time.Time
	sendSem   chan struct{}
	running   atomic.Bool

	mu       sync.Mutex
	status   Status
	lastChat string
	lastAt   time.Time
}

// New creates a relay. Without a token (cfg.Enabled() false) it returns an
// off relay: Run returns at once, Send returns [ErrUnconfigured], Status
// reports "off". New makes no network request.
func New(cfg Config, store Store, deliver DeliverFunc) (*Relay, error) {
	cfg = withDefaults(cfg)
	r := &Relay{
		cfg:     cfg,
		log:     cfg.Logger,
		store:   store,
		deliver: deliver,
		now:     time.Now,
		sendSem: make(chan struct{}, 1),
		allowed: map[string]bool{},
	}
	r.status.State = StateOff
	for _, c := range append([]string{cfg.ChatID}, cfg.Allowlist...) {
		if c = normalizeChat(c); c != "" {
			r.allowed[c] = true
		}
	}
	if !cfg.Enabled() {
		return r, nil
	}
	if store == nil || deliver == nil {
		return nil, errors.New("telegram: new relay: store and deliver are required")
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n/?#%") {
		return nil, errors.New("telegram: new relay: malformed bot token")
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram: new relay: bad API URL %q", cfg.APIURL)
	}
	r.base = strings.TrimRight(cfg.APIURL, "/")
	r.client = cfg.HTTPClient
	if r.client == nil {
		r.transport = http.DefaultTransport.(*http.Transport).Clone()
		r.client = &http.Client{Transport: r.transport}
	}
	r.api, err = bot.New(cfg.Token,
		bot.WithServerURL(r.base),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(cfg.PollTimeout, statusClient{r.client}),
		bot.WithErrorsHandler(func(err error) { r.log.Debug("telegram library error", "err", r.redact(err)) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: new relay: %w", r.redact(err))
	}
	r.offsetKey = "telegram.offset"
	if id := r.api.ID(); id > 0 {
		r.offsetKey += "." + strconv.FormatInt(id, 10)
	}
	return r, nil
}

// withDefaults fills zero fields of cfg.
func withDefaults(cfg Config) Config {
	cfg.Token = strings.TrimSpace(cfg.Token)
	cfg.ChatID = strings.TrimSpace(cfg.ChatID)
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.PollTimeout < time.Second {
		// getUpdates takes whole seconds; 0 would poll in a tight loop.
		cfg.PollTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = cfg.Backoff
	}
	if cfg.RejectedBackoff <= 0 {
		cfg.RejectedBackoff = DefaultRejectedBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	return cfg
}

// normalizeChat canonicalises a chat reference: numeric ids re-rendered,
// "@names" lower-cased.
func normalizeChat(c string) string {
	c = strings.TrimSpace(c)
	if n, err := strconv.ParseInt(c, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if strings.HasPrefix(c, "@") {
		return strings.ToLower(c)
	}
	return c
}

// Enabled reports whether the relay has a token.
func (r *Relay) Enabled() bool { return r != nil && r.cfg.Enabled() }

// OwnerChat is the chat `telegram` sends go to: the configured chat id, else
// the first allowlisted chat; empty when neither is set.
func (r *Relay) OwnerChat() string {
	if r == nil {
		return ""
	}
	if r.cfg.ChatID != "" {
		return r.cfg.ChatID
	}
	if len(r.cfg.Allowlist) > 0 {
		return strings.TrimSpace(r.cfg.Allowlist[0])
	}
	return ""
}

// LastInbound returns the chat and time of the last inbound message delivered
// to the architect, for the 5-minute `user` reply window. The time is when the
// relay received it, or when it was sent if it arrived delayed (so an old
// backlog does not open the window). Zero when nothing came in.
func (r *Relay) LastInbound() (chatID string, at time.Time) {
	if r == nil {
		return "", time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastChat, r.lastAt
}

// Status returns a snapshot of the relay's state and counters.
func (r *Relay) Status() Status {
	if r == nil {
		return Status{State: StateOff}
	}
	r.mu.Lock()
	st := r.status
	r.mu.Unlock()
	st.OwnerChat = r.OwnerChat()
	return st
}

// count updates a counter under the lock.
func (r *Relay) count(f func(*Status)) {
	r.mu.Lock()
	f(&r.status)
	r.mu.Unlock()
}
