package roles

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveSuggestsTarget(t *testing.T) {
	t.Parallel()
	team := Default()
	tests := []struct {
		name, suggest string
	}{
		{"biulder", "builder"},
		{"bulder", "builder"},
		{"Architekt", "architect"},
		{"oracel", "oracle"},
		{"telegarm", "telegram"},
		{"buidler-bg-1", "builder-bg-1"},
		{"investigater", "oracle"}, // an alias one edit away suggests its role
		{"usr", "user"},
		{"zz", ""},
		{"completely-unrelated", ""},
		{"", ""},
		{strings.Repeat("x", 500), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := team.Resolve(tt.name)
			if !errors.Is(err, ErrInvalidTarget) {
				t.Fatalf("Resolve(%q) err = %v, want ErrInvalidTarget", tt.name, err)
			}
			var ue *UnknownTargetError
			if !errors.As(err, &ue) {
				t.Fatalf("err %T is not *UnknownTargetError", err)
			}
			if ue.Suggestion != tt.suggest {
				t.Errorf("suggestion = %q, want %q (%v)", ue.Suggestion, tt.suggest, err)
			}
			msg := err.Error()
			if tt.suggest != "" && !strings.Contains(msg, "did you mean "+tt.suggest+"?") {
				t.Errorf("message %q lacks the suggestion", msg)
			}
			for _, want := range []string{"architect", "builder", "oracle", "all", "user", "telegram"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not list target %s", msg, want)
				}
			}
			if len(msg) > 400 {
				t.Errorf("message is %d bytes; the name must be clipped", len(msg))
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"builder", "builder", 0}, {"biulder", "builder", 1},
		{"kitten", "sitting", 3}, {"ab", "ba", 1}, {"日本", "日本語", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestSuggest: the one "did you mean" rule, for any list of names (hm's
// commands here): a typo within two edits and a third of the name is
// suggested, the nearest first; nothing near suggests nothing.
func TestSuggest(t *testing.T) {
	t.Parallel()
	commands := []string{"up", "send", "bg", "status", "attach", "comms", "journal", "help", "completion"}
	tests := []struct {
		name, want string
	}{
		{"stauts", "status"},
		{"sned", "send"},
		{"atach", "attach"},
		{"comms", "comms"},
		{"completon", "completion"},
		{"complete", ""}, // three edits
		{"jurnal", "journal"},
		{"x", ""},
		{"deploy", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.name, commands); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
