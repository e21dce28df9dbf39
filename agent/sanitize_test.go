package agent

import (
	"strings"
	"testing"
)

// TestNeutralizeShowsInvisible: bidi controls and zero-width characters in a
// message reach the agent visibly, so "rm -rf" cannot be displayed as
// something else. (Before, U+202E and U+200B were typed unchanged.)
func TestNeutralizeShowsInvisible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"safe \u202Efr- mr\u202C", "safe <U+202E>fr- mr<U+202C>"},
		{"a\u200Bb", "a<U+200B>b"},
		{"a\u200Cb\u200Dc", "a<U+200C>b<U+200D>c"},
		{"\uFEFFstart", "<U+FEFF>start"},
		{"x\u2066y\u2069z", "x<U+2066>y<U+2069>z"},
		{"\u200E\u200F\u061C", "<U+200E><U+200F><U+061C>"},
		{"word\u2060joiner", "word<U+2060>joiner"},
		// A joiner inside an emoji sequence is part of what is seen.
		{"family 👨\u200D👩\u200D👧 ok", "family 👨\u200D👩\u200D👧 ok"},
		{"❤\uFE0F\u200D🔥", "❤\uFE0F\u200D🔥"},
		{"\u200D👩", "<U+200D>👩"},
		{"👩\u200D", "👩<U+200D>"},
		// Ordinary text is left alone.
		{"日本語 and émoji 🎉", "日本語 and émoji 🎉"},
		{"arabic مرحبا hebrew שלום", "arabic مرحبا hebrew שלום"},
	}
	for _, tt := range tests {
		if got := Neutralize(tt.in); got != tt.want {
			t.Errorf("Neutralize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzNeutralizeInvisible(f *testing.F) {
	f.Add("a\u202Eb\u200Dc")
	f.Add("👨\u200D👩")
	f.Fuzz(func(t *testing.T, s string) {
		out := Neutralize(s)
		for _, r := range out {
			if invisible(r) && r != zwj {
				t.Fatalf("Neutralize(%q) = %q keeps the invisible U+%04X", s, out, r)
			}
		}
		if Neutralize(out) != out && !strings.Contains(out, "\u200D") {
			t.Fatalf("Neutralize is not idempotent on %q", out)
		}
	})
}
