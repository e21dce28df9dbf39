package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
	"hm/internal/ground/testutil"
)

// TestEnterDelayCanonical: a program whose terminal is canonical gets its
// Enter right after its text, whatever the profile's EnterDelay (#36): the
// line discipline hands it the finished line. Elsewhere the delay stands.
func TestEnterDelayCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		canonical bool
		want      time.Duration
	}{
		{canonical: true, want: 0},
		{canonical: false, want: time.Hour},
	} {
		if got := (Profile{EnterDelay: time.Hour}).enterDelay(tc.canonical); got != tc.want {
			t.Errorf("enterDelay(canonical %v) = %v, want %v", tc.canonical, got, tc.want)
		}
	}

	// A pane whose profile waits an hour before Enter still delivers to a
	// program reading cooked lines (bash's read builtin without -e).
	spec, _ := fakeSpec(t)
	out := filepath.Join(spec.Dir, "lines")
	spec.Command = testutil.LineReaderCommand(out)
	spec.Timing.EnterDelay = time.Hour
	p := startPane(t, spec)
	poll.For(t, 10*time.Second, func() error { return poll.Want(strings.Contains(string(p.Replay()), ">"), "the reader's prompt") })
	p.Enqueue(Delivery{MessageID: "canon-1", Content: "(ARCH #1): a cooked line"})
	poll.For(t, 30*time.Second, func() error {
		data, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		return poll.Want(strings.Contains(string(data), "a cooked line"), "the line read, have %q", data)
	})
}
