package notify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"hm/journal"
)

// Store keeps what was told across restarts: the ledger's key-value table.
type Store interface {
	KVGet(ctx context.Context, key string) (string, bool, error)
	KVSet(ctx context.Context, key, value string) error
}

// Sink tells the person one event. Name is for the log.
type Sink interface {
	Name() string
	Notify(ctx context.Context, ev Event) error
}

// keyPrefix starts the Store keys of told events.
const keyPrefix = "notify/told/"

// RecentLimit is how many told events Recent keeps.
const RecentLimit = 50

// queueLen bounds the events waiting for Run.
const queueLen = 256

// Notifier takes events (Post, and the broker's reports), tells each once
// to every sink, and keeps the latest for the cockpit. Run delivers.
type Notifier struct {
	log   *slog.Logger
	store Store
	sinks []Sink
	now   func() time.Time
	queue chan Event

	mu     sync.Mutex
	queued map[string]bool // keys posted in this hub's life
	recent []Event
	seq    int64
}

// Config configures a Notifier.
type Config struct {
	Logger *slog.Logger
	// Store keeps told keys across restarts; nil keeps them in memory.
	Store Store
	Sinks []Sink
	Now   func() time.Time
}

// New returns a Notifier; nothing is told until Run.
func New(cfg Config) *Notifier {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Notifier{log: cfg.Logger, store: cfg.Store, sinks: cfg.Sinks, now: cfg.Now,
		queue: make(chan Event, queueLen), queued: map[string]bool{}}
}

// Post queues ev to be told, unless its key was posted already. It never
// blocks: with the queue full the event is logged and dropped.
func (n *Notifier) Post(ev Event) {
	n.mu.Lock()
	dup := n.queued[ev.Key]
	n.queued[ev.Key] = true
	n.mu.Unlock()
	if dup {
		return
	}
	select {
	case n.queue <- ev:
	default:
		n.log.Warn("notification queue full; not told", "key", ev.Key, "line", ev.Line)
	}
}

// Routed reports a message the broker routed (broker.Noticer).
func (n *Notifier) Routed(m journal.Message) {
	if ev, ok := ForMessage(m); ok {
		n.Post(ev)
	}
}

// Stuck reports a message stuck at role's pane (broker.Noticer).
func (n *Notifier) Stuck(m journal.Message, role, reason string) {
	n.Post(ForStuck(m, role, reason, n.now()))
}

// Reminded reports an obligation's reminder (broker.Noticer).
func (n *Notifier) Reminded(o journal.Obligation) {
	if ev, ok := ForReminded(o, n.now()); ok {
		n.Post(ev)
	}
}

// Run tells the posted events until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-n.queue:
			n.tell(ctx, ev)
		}
	}
}

// tell tells ev to every sink unless the store says it was told before
// (by this hub or an earlier one).
func (n *Notifier) tell(ctx context.Context, ev Event) {
	if n.store != nil {
		_, told, err := n.store.KVGet(ctx, keyPrefix+ev.Key)
		if err != nil {
			n.log.Warn("notification: read what was told", "key", ev.Key, "err", err)
		}
		if told {
			return
		}
		if err := n.store.KVSet(ctx, keyPrefix+ev.Key, time.UnixMilli(ev.AtMs).UTC().Format(time.RFC3339)); err != nil {
			n.log.Warn("notification: record it as told", "key", ev.Key, "err", err)
		}
	}
	n.mu.Lock()
	n.seq++
	ev.Seq = n.seq
	n.recent = append(n.recent, ev)
	if len(n.recent) > RecentLimit {
		n.recent = n.recent[len(n.recent)-RecentLimit:]
	}
	n.mu.Unlock()
	n.log.Info("notify", "kind", ev.Kind, "line", ev.Line)
	for _, s := range n.sinks {
		if err := s.Notify(ctx, ev); err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("notification not shown", "sink", s.Name(), "key", ev.Key, "err", err)
		}
	}
}

// Recent returns the latest told events, oldest first (the cockpit's).
func (n *Notifier) Recent() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Event{}, n.recent...)
}
