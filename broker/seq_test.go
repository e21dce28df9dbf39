package broker

import (
	"fmt"
	"runtime"
	"testing"

	"hm/roles"
)

// TestSequencerMemoryBounded: one sender's 200,000 messages in one session
// must not grow the sequencer's memory with the message count.
func TestSequencerMemoryBounded(t *testing.T) {
	// Not parallel: it measures the process's heap.
	const n = 200_000
	s := newSequencer()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := 1; i <= n; i++ {
		st := s.lock("architect")
		body := fmt.Sprintf("message number %d with some text", i)
		var h roles.Header
		hasHeader := i%2 == 0 // half numbered by the client, half by the hub
		if hasHeader {
			h = roles.Header{Role: "ARCH", Seq: int64(i)}
		}
		d := st.decide(h, hasHeader, body)
		if d.Seq != int64(i) || d.Duplicate != "" || d.Lookup {
			st.unlock()
			t.Fatalf("message %d: decision %+v", i, d)
		}
		st.commit(d, body, fmt.Sprintf("hm-%d-abcdef", i))
		st.unlock()
	}
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("sequencer heap growth over %d messages from one sender: %d KiB", n, grew/1024)
	if grew > 2<<20 {
		t.Fatalf("sequencer grew %d KiB over %d messages; want it bounded (< 2 MiB)", grew/1024, n)
	}
	runtime.KeepAlive(s)

	// Recent duplicates are still caught from memory; older numbers are
	// handed to the ledger lookup instead of being forgotten.
	st := s.lock("architect")
	defer st.unlock()
	recent := fmt.Sprintf("message number %d with some text", n)
	if d := st.decide(roles.Header{Role: "ARCH", Seq: n}, true, recent); d.Duplicate != fmt.Sprintf("hm-%d-abcdef", n) {
		t.Fatalf("recent duplicate: %+v", d)
	}
	if d := st.decide(roles.Header{Role: "ARCH", Seq: 2}, true, "message number 2 with some text"); !d.Lookup {
		t.Fatalf("old number not sent to the ledger: %+v", d)
	}
}
