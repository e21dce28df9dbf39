package benchutil

import (
	"slices"
	"testing"
)

func TestTally(t *testing.T) {
	t.Parallel()
	tl := NewTally(4)
	for _, n := range []int{0, 1, 2} {
		tl.Acked(ID(n))
	}
	for _, id := range []string{ID(0), ID(1), ID(1), ID(3)} {
		if !tl.Delivered(id) {
			t.Errorf("%s not tallied", id)
		}
	}
	for _, id := range []string{"tp-x", "tp-00000009", "other", "tp--1"} {
		if tl.Delivered(id) {
			t.Errorf("%s tallied", id)
		}
	}
	// 1 delivered twice (+1), 2 never delivered (+1), 3 never acked (+1).
	if got := tl.Lost(); got != 3 {
		t.Errorf("lost %d, want 3", got)
	}
	if got := Spread(5, 2); !slices.Equal(got, []int{3, 2}) {
		t.Errorf("Spread(5, 2) = %v", got)
	}
}
