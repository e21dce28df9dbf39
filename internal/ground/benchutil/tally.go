package benchutil

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Tally counts, for the numbered messages of a throughput benchmark, which
// were acknowledged to their sender and how often each reached a receiver,
// so that both sides of a comparison count lost and duplicated messages
// the same way. Message n's id is ID(n). It is safe for concurrent use.
type Tally struct {
	acked     []atomic.Bool
	delivered []atomic.Int32
}

// NewTally tallies messages 0..total-1.
func NewTally(total int) *Tally {
	return &Tally{acked: make([]atomic.Bool, total), delivered: make([]atomic.Int32, total)}
}

// ID is message n's id.
func ID(n int) string { return fmt.Sprintf("tp-%08d", n) }

func (t *Tally) index(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "tp-"))
	return n, err == nil && strings.HasPrefix(id, "tp-") && n >= 0 && n < len(t.acked)
}

// Acked records that id's sender got a positive acknowledgement.
func (t *Tally) Acked(id string) {
	if n, ok := t.index(id); ok {
		t.acked[n].Store(true)
	}
}

// Delivered records that id reached a receiver; it reports whether id is
// one of the tallied messages.
func (t *Tally) Delivered(id string) bool {
	n, ok := t.index(id)
	if ok {
		t.delivered[n].Add(1)
	}
	return ok
}

// Lost counts the messages never acknowledged or never delivered, plus
// every delivery beyond a message's first (a duplicate).
func (t *Tally) Lost() int64 {
	var lost int64
	for n := range t.acked {
		d := int64(t.delivered[n].Load())
		if !t.acked[n].Load() || d == 0 {
			lost++
		}
		lost += max(d-1, 0)
	}
	return lost
}

// Spread is how many of total messages, sent round robin to k receivers,
// each receiver gets.
func Spread(total, k int) []int {
	want := make([]int, k)
	for i := range total {
		want[i%k]++
	}
	return want
}
