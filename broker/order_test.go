package broker_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"hm/broker/proto"
)

// TestListenerGetsBacklogAndLiveInOrder: a listener that registers while
// its backlog is in the ledger and more messages keep arriving gets them
// all in the order they were committed. A live message used to be queued
// at once while the backlog replay was still reading, so it overtook the
// older rows (seen as a trigger drained at hub start arriving before two
// written before it).
func TestListenerGetsBacklogAndLiveInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sender := h.as("builder", false)
	const backlog, live = 300, 300
	ids := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%04d", prefix, i)
		}
		return out
	}
	frame := func(id string) proto.Frame {
		return proto.Frame{Type: proto.TypeSend, Target: "oracle", MessageID: id, Content: "(BUILDER #1): " + id}
	}
	sendPipelined(t, sender, ids("old", backlog), frame)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sendPipelined(t, sender, ids("new", live), frame)
	}()
	o := h.as("oracle", true)
	// One connection's sends are committed in order (SPEC §5).
	want := append(ids("old", backlog), ids("new", live)...)
	for n, id := range want {
		raw := nextOf(t, o, proto.TypeMessage)
		var m proto.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.MessageID != id {
			t.Fatalf("message %d: got %s, want %s: out of commit order", n, m.MessageID, id)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the live sender did not finish")
	}
}
