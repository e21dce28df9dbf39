package journal

import (
	"strconv"
	"strings"
	"testing"
)

// The writer's row cache keeps the newest rows within its bounds, reuses
// the slots of rows it let go, and counts the bytes it holds.
func TestRowCache(t *testing.T) {
	row := func(i, body int) heldRow {
		return heldRow{m: Message{MessageID: "m" + strconv.Itoa(i), RowID: int64(i), RawBody: strings.Repeat("b", body)}}
	}
	tests := []struct {
		name     string
		fill     func(c *rowCache)
		held     []int // rows still held
		gone     []int // rows let go
		maxSlots int
	}{
		{"over the row bound: the oldest go", func(c *rowCache) {
			for i := range rowCacheRows + 10 {
				c.put(row(i, 1))
			}
		}, []int{10, rowCacheRows + 9}, []int{0, 9}, rowCacheRows + 1},
		{"over the byte bound: the oldest go", func(c *rowCache) {
			for i := range 70 { // 64 fit
				c.put(row(i, rowCacheMaxBody))
			}
		}, []int{6, 69}, []int{0, 5}, 65},
		{"a replaced row keeps its place", func(c *rowCache) {
			c.put(row(1, 1))
			c.put(row(2, 1))
			c.put(row(1, 2))
		}, []int{1, 2}, nil, 2},
		{"removed slots are reused", func(c *rowCache) {
			for i := range 100 {
				c.put(row(i, 1))
				c.remove("m" + strconv.Itoa(i))
			}
			c.put(row(100, 1))
		}, []int{100}, []int{0, 99}, 1},
		{"a body over the bound is not kept", func(c *rowCache) {
			c.put(row(1, 1))
			c.put(row(1, rowCacheMaxBody+1))
		}, nil, []int{1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRowCache()
			tt.fill(c)
			for _, i := range tt.held {
				r, ok := c.get("m" + strconv.Itoa(i))
				if !ok || r.m.RowID != int64(i) {
					t.Errorf("row %d: held %v, got %+v", i, ok, r.m.MessageID)
				}
			}
			for _, i := range tt.gone {
				if _, ok := c.get("m" + strconv.Itoa(i)); ok {
					t.Errorf("row %d still held", i)
				}
			}
			if len(c.slots) > tt.maxSlots {
				t.Errorf("%d slots, want at most %d", len(c.slots), tt.maxSlots)
			}
			sum := 0
			for _, i := range c.at {
				sum += c.slots[i].size()
			}
			if sum != c.bytes {
				t.Errorf("bytes = %d, the rows held sum to %d", c.bytes, sum)
			}
			c.clear()
			if len(c.at) != 0 || c.bytes != 0 {
				t.Errorf("after clear: %d rows, %d bytes", len(c.at), c.bytes)
			}
		})
	}
}
