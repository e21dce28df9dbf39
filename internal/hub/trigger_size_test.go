package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
	"hm/triggers"
)

// TestHubTriggerSizeLimit: a trigger file of exactly the limit (256 KiB,
// SPEC §7) is delivered, also unsigned, where the hub puts its
// "[unverified sender]" mark before it; one byte more is refused as
// too_large with its reason.
func TestHubTriggerSizeLimit(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes})
	dir := th.h.Layout.Triggers()
	builder := th.as("builder", true)
	archTok := th.h.Tokens.Issue("architect")
	signed := func(id string, size int) string {
		head := "[HM-MESSAGE-ID:" + id + "]\n"
		sig := triggers.SignLine(archTok, "architect", id, "") // only its length counts here
		body := strings.Repeat("s", size-len(head)-len(sig)-1)
		return head + triggers.SignLine(archTok, "architect", id, body) + "\n" + body
	}
	tests := []struct {
		name, file, content string
		delivered           bool
	}{
		{"unsigned, exactly the limit", "builder.u0.txt", strings.Repeat("u", triggers.DefaultMaxBytes), true},
		{"unsigned, one byte over", "builder.u1.txt", strings.Repeat("u", triggers.DefaultMaxBytes+1), false},
		{"signed, exactly the limit", "builder.s0.txt", signed("s0", triggers.DefaultMaxBytes), true},
		{"signed, one byte over", "builder.s1.txt", signed("s1", triggers.DefaultMaxBytes+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.content) != triggers.DefaultMaxBytes && len(tc.content) != triggers.DefaultMaxBytes+1 {
				t.Fatalf("test file is %d bytes", len(tc.content))
			}
			writeTrigger(t, dir, tc.file, tc.content)
			if tc.delivered {
				m := nextMessage(t, builder)
				if !strings.Contains(m.Content, tc.content[len(tc.content)-100:]) {
					t.Fatalf("delivered %d bytes ending %q", len(m.Content), m.Content[max(0, len(m.Content)-20):])
				}
				return
			}
			reason := filepath.Join(dir, "rejected", tc.file+".reason")
			poll.For(t, 30*time.Second, func() error {
				data, err := os.ReadFile(reason)
				return poll.Want(err == nil && strings.HasPrefix(string(data), "too_large\n") && strings.Contains(string(data), "limit"), "%s rejected as too_large: %v %q", tc.file, err, data)
			})
		})
	}
}
