package journal

type subscription struct {
	ch      chan Event
	dropped uint64 // guarded by Ledger.subsMu
}

// Subscribe returns a channel receiving every committed event in commit
// order, and a function that ends the subscription (closing the channel;
// safe to call more than once). buf is the channel capacity (<= 0: 256).
// The writer never blocks on a subscriber: when the channel is full the
// event is dropped and counted (see Dropped). Close ends all subscriptions.
// Event.Detail is shared between subscribers and must not be modified.
func (l *Ledger) Subscribe(buf int) (<-chan Event, func()) {
	if buf <= 0 {
		buf = 256
	}
	s := &subscription{ch: make(chan Event, buf)}
	l.subsMu.Lock()
	defer l.subsMu.Unlock()
	if l.subs == nil { // closed
		close(s.ch)
		return s.ch, func() {}
	}
	l.subs[s] = struct{}{}
	return s.ch, func() {
		l.subsMu.Lock()
		defer l.subsMu.Unlock()
		if _, ok := l.subs[s]; ok {
			delete(l.subs, s)
			close(s.ch)
		}
	}
}

// Dropped returns how many events were dropped because a subscriber's
// channel was full, over all subscriptions.
func (l *Ledger) Dropped() uint64 { return l.dropped.Load() }

func (l *Ledger) publish(evs []Event) {
	if len(evs) == 0 {
		return
	}
	l.subsMu.Lock()
	defer l.subsMu.Unlock()
	for s := range l.subs {
		for _, e := range evs {
			select {
			case s.ch <- e:
			default:
				s.dropped++
				l.dropped.Add(1)
				if s.dropped == 1 {
					l.log.Warn("journal: slow subscriber, dropping events", "buf", cap(s.ch))
				}
			}
		}
	}
}

func (l *Ledger) closeSubscribers() {
	l.subsMu.Lock()
	defer l.subsMu.Unlock()
	for s := range l.subs {
		close(s.ch)
	}
	l.subs = nil
}
