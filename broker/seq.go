package broker

import (
	"crypto/sha256"
	"sync"

	"hm/roles"
)

// Sequence warnings (SPEC §2).
const (
	WarnSeqReused = "seq_reused"
	WarnSeqGap    = "seq_gap"
)

// seqDecision is what the sequencer decided for one message.
type seqDecision struct {
	Seq       int64
	Warning   string // "", seq_reused or seq_gap
	Duplicate string // message id of the first copy, when this is a duplicate
	Prefix    bool   // the hub must prepend the header
	// Lookup: the number is older than the in-memory window; whether this
	// is a duplicate must be asked of the ledger.
	Lookup bool
}

// sequencer owns per-sender sequence counters for one session. Each sender
// has its own lock, held by the caller from decide until commit or rollback,
// so that sequence order equals commit order per sender.
type sequencer struct {
	mu      sync.Mutex
	senders map[string]*senderSeq
	ids     *idIndex
}

// idIndex maps the message ids the sequencer holds (queued or committed,
// the numbers still in a sender's window) to their sender, so that a
// repeated id is known before it takes a number: a duplicate that took one
// and gave it back once the ledger refused it would leave a gap, or a
// number twice, when the sender's next message was numbered meanwhile.
type idIndex struct {
	mu sync.Mutex
	m  map[string]string
}

// claim records id for sender unless it is held already; it returns the
// sender that holds it and whether this call recorded it.
func (x *idIndex) claim(id, sender string) (owner string, fresh bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if owner, ok := x.m[id]; ok {
		return owner, false
	}
	x.m[id] = sender
	return sender, true
}

// release forgets id.
func (x *idIndex) release(id string) {
	x.mu.Lock()
	delete(x.m, id)
	x.mu.Unlock()
}

type senderSeq struct {
	mu   sync.Mutex
	ids  *idIndex
	next int64
	// seen holds the bodies accepted with the newest seqWindow numbers (at
	// most maxBodiesPerSeq each), so memory stays bounded however long the
	// session. Older numbers are checked against the ledger (Lookup).
	seen map[int64][]seenBody
	// ring lists the numbers in seen in the order they were added; when
	// full, the oldest is evicted and evicted raised to it.
	ring    [seqWindow]int64
	ringLen int
	ringPos int
	evicted int64 // the highest number evicted from seen (0: none)
}

// seqWindow is how many of a sender's numbers keep their bodies in memory
// for duplicate detection; maxBodiesPerSeq bounds the bodies kept for one
// reused number.
const (
	seqWindow       = 1024
	maxBodiesPerSeq = 8
)

type seenBody struct {
	hash [32]byte
	id   string
}

func newSequencer() *sequencer {
	return &sequencer{senders: map[string]*senderSeq{}, ids: &idIndex{m: map[string]string{}}}
}

// lock returns the sender's state, locked. The caller must call unlock.
func (s *sequencer) lock(sender string) *senderSeq {
	s.mu.Lock()
	st, ok := s.senders[sender]
	if !ok {
		st = &senderSeq{ids: s.ids, next: 1, seen: make(map[int64][]seenBody, seqWindow)}
		s.senders[sender] = st
	}
	s.mu.Unlock()
	st.mu.Lock()
	return st
}

func (st *senderSeq) unlock() { st.mu.Unlock() }

// decide applies the SPEC §2 rules to a message whose header (if any) is h.
// It does not change state; commit does.
func (st *senderSeq) decide(h roles.Header, hasHeader bool, body string) seqDecision {
	if !hasHeader {
		return seqDecision{Seq: st.next, Prefix: true}
	}
	switch {
	case h.Seq == st.next:
		return seqDecision{Seq: h.Seq}
	case h.Seq < st.next:
		sum := sha256.Sum256([]byte(body))
		bodies, inWindow := st.seen[h.Seq]
		for _, b := range bodies {
			if b.hash == sum {
				return seqDecision{Seq: h.Seq, Duplicate: b.id}
			}
		}
		if !inWindow && h.Seq <= st.evicted {
			return seqDecision{Seq: h.Seq, Warning: WarnSeqReused, Lookup: true}
		}
		return seqDecision{Seq: h.Seq, Warning: WarnSeqReused}
	default:
		return seqDecision{Seq: h.Seq, Warning: WarnSeqGap}
	}
}

// commit records an accepted message, whose id the caller claimed.
func (st *senderSeq) commit(d seqDecision, body, messageID string) {
	if d.Seq >= st.next {
		st.next = d.Seq + 1
	}
	bodies, had := st.seen[d.Seq]
	if len(bodies) >= maxBodiesPerSeq {
		st.ids.release(bodies[0].id)
		bodies = append(bodies[:0:0], bodies[1:]...)
	}
	st.seen[d.Seq] = append(bodies, seenBody{hash: sha256.Sum256([]byte(body)), id: messageID})
	if had {
		return
	}
	if st.ringLen == seqWindow {
		old := st.ring[st.ringPos]
		if gone, ok := st.seen[old]; ok && old != d.Seq {
			for _, b := range gone {
				st.ids.release(b.id)
			}
			delete(st.seen, old)
		}
		if old > st.evicted {
			st.evicted = old
		}
	} else {
		st.ringLen++
	}
	st.ring[st.ringPos] = d.Seq
	st.ringPos = (st.ringPos + 1) % seqWindow
}

// forget takes back a decision whose commit failed: the body and its id no
// longer count as seen, and if it was the newest number the counter steps
// back.
func (st *senderSeq) forget(d seqDecision, body, messageID string) {
	st.ids.release(messageID)
	sum := sha256.Sum256([]byte(body))
	kept := st.seen[d.Seq][:0]
	for _, b := range st.seen[d.Seq] {
		if b.hash != sum || b.id != messageID {
			kept = append(kept, b)
		}
	}
	if len(kept) == 0 {
		delete(st.seen, d.Seq)
	} else {
		st.seen[d.Seq] = kept
	}
	if st.next == d.Seq+1 {
		st.next = d.Seq
	}
}
