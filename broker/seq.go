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
}

type seqKey struct {
	sender string
	seq    int64
}

// sequencer owns per-sender sequence counters for one session. Each sender
// has its own lock, held by the caller from decide until commit or rollback,
// so that sequence order equals commit order per sender.
type sequencer struct {
	mu      sync.Mutex
	senders map[string]*senderSeq
}

type senderSeq struct {
	mu   sync.Mutex
	next int64
	seen map[int64][]seenBody // seq -> bodies accepted with it
}

type seenBody struct {
	hash [32]byte
	id   string
}

func newSequencer() *sequencer { return &sequencer{senders: map[string]*senderSeq{}} }

// lock returns the sender's state, locked. The caller must call unlock.
func (s *sequencer) lock(sender string) *senderSeq {
	s.mu.Lock()
	st, ok := s.senders[sender]
	if !ok {
		st = &senderSeq{next: 1, seen: map[int64][]seenBody{}}
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
		for _, b := range st.seen[h.Seq] {
			if b.hash == sum {
				return seqDecision{Seq: h.Seq, Duplicate: b.id}
			}
		}
		return seqDecision{Seq: h.Seq, Warning: WarnSeqReused}
	default:
		return seqDecision{Seq: h.Seq, Warning: WarnSeqGap}
	}
}

// commit records an accepted message.
func (st *senderSeq) commit(d seqDecision, body, messageID string) {
	if d.Seq >= st.next {
		st.next = d.Seq + 1
	}
	st.seen[d.Seq] = append(st.seen[d.Seq], seenBody{hash: sha256.Sum256([]byte(body)), id: messageID})
}

// forget takes back a decision whose commit failed: the body no longer
// counts as seen, and if it was the newest number the counter steps back.
func (st *senderSeq) forget(d seqDecision, body, messageID string) {
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
