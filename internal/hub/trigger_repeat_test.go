package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/poll"
	"hm/internal/status"
	"hm/triggers"
)

// TestHubTriggerRepeatLeavesTrace: a trigger file that repeats a message
// the ledger holds (the same id, sender and body; or, with another id, the
// same sender, number and body) is not delivered again, but it is not
// dropped unseen either (SPEC §7): the first copy gets a "repeated" event
// naming the file and the id it carried, and nothing lands in rejected/.
func TestHubTriggerRepeatLeavesTrace(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes})
	dir := th.h.Layout.Triggers()
	builder := th.as("builder", true)
	archTok := th.h.Tokens.Issue("architect")
	if _, err := triggers.WriteSigned(dir, "builder", "rep-1", "(ARCH #7): the words", "architect", archTok); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, builder); m.MessageID != "rep-1" {
		t.Fatalf("first copy = %+v", m)
	}
	// An unsigned file with an id line: stored with the hub's mark.
	writeTrigger(t, dir, "builder.u.txt", "[HM-MESSAGE-ID:rep-u]\nunsigned words")
	if m := nextMessage(t, builder); m.MessageID != "rep-u" {
		t.Fatalf("first unsigned copy = %+v", m)
	}
	tests := []struct {
		name  string
		first string // the message repeated
		id    string // the id the repeating file carries
		write func(file string)
	}{
		{"same id, sender and body (hm-send's fallback after a lost ACK)", "rep-1", "rep-1", func(string) {
			if _, err := triggers.WriteSigned(dir, "builder", "rep-1", "(ARCH #7): the words", "architect", archTok); err != nil {
				t.Fatal(err)
			}
		}},
		{"another id, same sender, number and body", "rep-1", "rep-2", func(string) {
			if _, err := triggers.WriteSigned(dir, "builder", "rep-2", "(ARCH #7): the words", "architect", archTok); err != nil {
				t.Fatal(err)
			}
		}},
		{"unsigned, same id and body", "rep-u", "rep-u", func(file string) {
			writeTrigger(t, dir, file, "[HM-MESSAGE-ID:rep-u]\nunsigned words")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "builder." + tc.id + ".txt"
			tc.write(file)
			poll.For(t, 30*time.Second, func() error {
				evs, _, _, err := th.h.Ledger.MessageChain(context.Background(), tc.first)
				if err != nil {
					return err
				}
				for _, e := range evs {
					if e.Event == status.EventRepeated && strings.Contains(e.Detail, `"file":"`+file+`"`) && strings.Contains(e.Detail, `"messageId":"`+tc.id+`"`) {
						return nil
					}
				}
				return poll.Want(false, "no repeated event for %s on %s: %+v", file, tc.first, evs)
			})
			if _, err := os.Stat(filepath.Join(dir, file)); !os.IsNotExist(err) {
				t.Errorf("%s still in triggers/: %v", file, err)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "rejected")); len(ents) != 0 {
				t.Errorf("rejected/ holds %d entries", len(ents))
			}
		})
	}
}
