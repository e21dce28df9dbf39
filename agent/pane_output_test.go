package agent

import (
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestViewersKeepTheirChunks checks that a viewer's chunk stays as it was
// when the reader's buffer is reused for the next read: the output
// handler works on that buffer and hands viewers a copy.
func TestViewersKeepTheirChunks(t *testing.T) {
	t.Parallel()
	p, pr := startSilentPane(t, "")
	ch, cancel := p.Subscribe()
	defer cancel()
	buf := []byte("first")
	p.handleOutput(pr, buf)
	copy(buf, "later")
	p.handleOutput(pr, buf)
	for _, want := range []string{"first", "later"} {
		select {
		case got := <-ch:
			if string(got) != want {
				t.Errorf("viewer got %q, want %q", got, want)
			}
		case <-time.After(poll.Floor):
			t.Fatalf("no chunk %q", want)
		}
	}
}
