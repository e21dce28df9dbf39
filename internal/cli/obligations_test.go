package cli

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/ground/status"
	"hm/internal/hub"
)

// TestPrintObligations: hm status's text names how far each owed message
// got in plain words, and what would make it "seen by the agent"; a row it
// could not read leaves the line as it was.
func TestPrintObligations(t *testing.T) {
	opened := time.Now().Add(-5 * time.Minute).UnixMilli()
	view := proto.ObligationView{MessageID: "ask-1", SessionID: "app-session-2", Owner: "builder", Requester: "architect", Ref: "ARCH #3", OpenedAtMs: opened, Open: true}
	tests := []struct {
		name string
		ob   hub.ObligationStatus
		want string
	}{
		{"typed", hub.ObligationStatus{ObligationView: view, Stage: status.Typed, Delivery: "typed", ToVerify: status.Typed.ToVerify()},
			`(?m)^  builder owes architect an answer to ARCH #3, open 5m\d+s; ARCH #3 is typed, seen by the agent once its CLI reports it \(hooks: hm init\)$`},
		{"seen", hub.ObligationStatus{ObligationView: view, Stage: status.DeliveredVerified, Delivery: "seen by the agent"},
			`(?m)^  builder owes architect an answer to ARCH #3, open 5m\d+s; ARCH #3 is seen by the agent$`},
		{"row unread", hub.ObligationStatus{ObligationView: view},
			`(?m)^  builder owes architect an answer to ARCH #3, open 5m\d+s$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			st := hub.Status{Obligations: []hub.ObligationStatus{tc.ob}}
			st.Hub.SessionID = "app-session-2"
			printObligations(&out, st)
			if !regexp.MustCompile(tc.want).MatchString(out.String()) {
				t.Errorf("hm status prints\n%s\nwant a line matching %s", out.String(), tc.want)
			}
		})
	}
}
