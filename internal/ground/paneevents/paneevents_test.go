package paneevents

import (
	"slices"
	"testing"
)

// TestWrap: the fault hooks run after Typed and before the unproven
// Submitted only, and nil hooks or nil callbacks change nothing.
func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		base       bool // Typed and Submitted set
		after, pre bool // afterTyped, beforeSubmitted set
		want       []string
	}{
		{name: "both", base: true, after: true, pre: true,
			want: []string{"typed", "afterTyped", "beforeSubmitted", "submitted false", "submitted true"}},
		{name: "none", base: true, want: []string{"typed", "submitted false", "submitted true"}},
		{name: "no callbacks", after: true, pre: true, want: []string{"afterTyped", "beforeSubmitted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var c Callbacks
			if tc.base {
				c.Typed = func() { got = append(got, "typed") }
				c.Submitted = func(proven bool) {
					got = append(got, map[bool]string{false: "submitted false", true: "submitted true"}[proven])
				}
			}
			var after, pre func()
			if tc.after {
				after = func() { got = append(got, "afterTyped") }
			}
			if tc.pre {
				pre = func() { got = append(got, "beforeSubmitted") }
			}
			w := c.Wrap(after, pre)
			if w.Typed != nil {
				w.Typed()
			}
			if w.Submitted != nil {
				w.Submitted(false)
				w.Submitted(true)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}
