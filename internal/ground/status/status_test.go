package status

import (
	"os"
	"regexp"
	"testing"
)

func TestStatusRank(t *testing.T) {
	tests := []struct {
		s    Status
		want int
	}{
		{Recorded, 0}, {Brokered, 1}, {Failed, 2}, {Routed, 3}, {Acked, 4},
		{"", -1}, {"ROUTED", -1}, {"delivered.verified", -1},
	}
	for _, tt := range tests {
		if got := tt.s.Rank(); got != tt.want {
			t.Errorf("Status(%q).Rank() = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestStageRank(t *testing.T) {
	// The order SPEC §5.3 gives for a pane, with the listener's stage between
	// submitted and the hook's; stuck sits where a retry can still raise it.
	// accepted.queued_remote (federation) is below accepted.unverified: the
	// forward that ends it raises the row.
	order := []Stage{StageNone, AcceptedQueuedRemote, AcceptedUnverified, Typed, Stuck, Submitted, DeliveredWebSocket, DeliveredContext, DeliveredVerified}
	for i, s := range order {
		if got := s.Rank(); got != i {
			t.Errorf("Stage(%q).Rank() = %d, want %d", s, got, i)
		}
	}
	for _, s := range []Stage{FallbackTriggered, "routed", "DELIVERED.VERIFIED", " "} {
		if got := s.Rank(); got != -1 {
			t.Errorf("Stage(%q).Rank() = %d, want -1 (not a stored stage)", s, got)
		}
	}
}

func TestStageDelivered(t *testing.T) {
	tests := []struct {
		s    Stage
		want bool
	}{
		{DeliveredVerified, true}, {DeliveredWebSocket, true}, {DeliveredContext, true},
		{AcceptedUnverified, false}, {Typed, false}, {Submitted, false}, {Stuck, false},
		{FallbackTriggered, false}, {StageNone, false},
	}
	for _, tt := range tests {
		if got := tt.s.Delivered(); got != tt.want {
			t.Errorf("Stage(%q).Delivered() = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestCodesComplete: Codes lists every Code constant in status.go once.
func TestCodesComplete(t *testing.T) {
	src, err := os.ReadFile("status.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s+Code\w+\s+Code = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c] {
			t.Errorf("Codes lists %q twice", c)
		}
		seen[c] = true
	}
	for _, m := range declared {
		if !seen[Code(m[1])] {
			t.Errorf("code %q is declared but not in Codes", m[1])
		}
	}
	if len(declared) != len(Codes) {
		t.Errorf("%d codes declared, %d in Codes", len(declared), len(Codes))
	}
}

// TestPlainStages: every stage a person can meet has its plain words in the
// one table, which lists them in rank order (issue #34 item 2).
func TestPlainStages(t *testing.T) {
	for _, s := range append(append([]Stage{}, Stages...), FallbackTriggered) {
		n := 0
		for _, p := range PlainStages {
			if p.Stage == s {
				n++
			}
		}
		if n != 1 || s.Plain() == "" || s.Plain() == string(s) && s != Typed && s != Stuck && s != Submitted {
			t.Errorf("stage %q: %d table rows, words %q", s, n, s.Plain())
		}
	}
	for i, p := range PlainStages[:len(PlainStages)-1] {
		if p.Stage.Rank() != i {
			t.Errorf("PlainStages[%d] is %q, rank %d", i, p.Stage, p.Stage.Rank())
		}
	}
	tests := []struct {
		s    Stage
		want string
	}{
		{AcceptedUnverified, "queued"}, {Submitted, "submitted"}, {DeliveredVerified, "seen by the agent"}, {"odd", "odd"},
	}
	for _, tt := range tests {
		if got := tt.s.Plain(); got != tt.want {
			t.Errorf("Stage(%q).Plain() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
