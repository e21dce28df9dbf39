package broker_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"hm/broker/proto"
)

// TestSeqAfterRepeatedID: a send whose messageId is already queued or
// committed takes no number (SPEC §2: N rises by exactly one per message),
// even when the sender's next frames are already behind it on the
// connection. The repeat used to take the next number until the ledger
// refused it, so a pipelined "(ORACLE #2)" got a seq_reused warning, and
// when the number was given back the next headerless message got 2 again
// (or, the other way round, a number was skipped).
func TestSeqAfterRepeatedID(t *testing.T) {
	t.Parallel()
	type want struct {
		seq     int64
		status  string
		dedupe  bool
		warning bool
	}
	cases := []struct {
		name string
		// before is sent by "architect" and answered before the pipeline.
		before  []proto.Frame
		frames  []proto.Frame
		want    []want
		nextSeq int64 // oracle's next headerless message
	}{
		{
			name: "repeat while the first copy is in flight",
			frames: []proto.Frame{
				{Content: "one", MessageID: "dup-a"},
				{Content: "one", MessageID: "dup-a"},
				{Content: "(ORACLE #2): two"},
				{Content: "three"},
			},
			want: []want{
				{seq: 1, status: "accepted.unverified"},
				{seq: 1, status: "accepted.unverified", dedupe: true},
				{seq: 2, status: "accepted.unverified"},
				{seq: 3, status: "accepted.unverified"},
			},
			nextSeq: 4,
		},
		{
			name: "repeat with other content while the first is in flight",
			frames: []proto.Frame{
				{Content: "one", MessageID: "dup-b"},
				{Content: "not one", MessageID: "dup-b"},
				{Content: "(ORACLE #2): two"},
			},
			want: []want{
				{seq: 1, status: "accepted.unverified"},
				{seq: 1, status: "accepted.unverified", dedupe: true},
				{seq: 2, status: "accepted.unverified"},
			},
			nextSeq: 3,
		},
		{
			name:   "another sender's id",
			before: []proto.Frame{{Content: "mine", MessageID: "dup-c"}},
			frames: []proto.Frame{
				{Content: "one"},
				{Content: "theirs", MessageID: "dup-c"},
				{Content: "(ORACLE #2): two"},
				{Content: "three"},
			},
			want: []want{
				{seq: 1, status: "accepted.unverified"},
				{status: "duplicate_id"},
				{seq: 2, status: "accepted.unverified"},
				{seq: 3, status: "accepted.unverified"},
			},
			nextSeq: 4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			if len(tc.before) > 0 {
				a := h.as("architect", false)
				for _, f := range tc.before {
					f.Type, f.Target = proto.TypeSend, "builder"
					if ack := send(t, a, f); !ack.OK {
						t.Fatalf("architect's send: %+v", ack)
					}
				}
			}
			o := h.as("oracle", false)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// All frames are written before any ACK is read: the
			// connection sequences each while the ones before it commit.
			for i, f := range tc.frames {
				f.Type, f.Target, f.RequestID = proto.TypeSend, "builder", "r"+itoa(i)
				if err := o.WriteJSON(ctx, f); err != nil {
					t.Fatal(err)
				}
			}
			for i, w := range tc.want {
				var a proto.Ack
				if err := json.Unmarshal(nextOf(t, o, proto.TypeSendAck), &a); err != nil {
					t.Fatal(err)
				}
				if a.Seq != w.seq || a.Status != w.status || a.Dedupe != w.dedupe || (len(a.Warnings) > 0) != w.warning {
					t.Errorf("frame %d (%q): ACK seq %d status %s dedupe %v warnings %v; want seq %d status %s dedupe %v warning %v",
						i, tc.frames[i].Content, a.Seq, a.Status, a.Dedupe, a.Warnings, w.seq, w.status, w.dedupe, w.warning)
				}
			}
			ack := send(t, o, proto.Frame{Type: proto.TypeSend, Target: "builder", Content: "last"})
			if ack.Seq != tc.nextSeq || !slices.Equal(ack.Warnings, []string{}) {
				t.Errorf("the next message got seq %d warnings %v; want seq %d and none", ack.Seq, ack.Warnings, tc.nextSeq)
			}
		})
	}
}
