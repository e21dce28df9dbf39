package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"hm/broker"
	"hm/broker/proto"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/roles"
)

// servesTeam: architect a pane here, builder another hub's, oracle and
// scout WebSocket roles.
func servesTeam(t *testing.T) harnessOpt {
	team, err := roles.Parse([]byte(`{"panes":[
	 {"role":"architect","command":"sh"},
	 {"role":"builder","transport":"remote"},
	 {"role":"oracle","transport":"ws"},
	 {"role":"scout","transport":"ws"}],"background":{"max":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *broker.Config, _ *broker.Deps) { c.Team = team }
}

// Serves (what federation advertises and consumes) is a pane of this hub,
// or a listener of a member not declared remote; never user, never a
// connection that does not listen. AcceptRemote routes a message for a
// listener-served role to the listener and waits until it is handed over;
// one for a ws role with no listener now is left for later, not refused.
func TestServesAndAcceptRemote(t *testing.T) {
	h := newHarness(t, servesTeam(t), withPanes("architect"))
	h.as("user", true)      // the operator, listening
	h.as("scout", false)    // a send-only connection
	h.as("architect", true) // a listener of the pane role too
	lis := h.as("oracle", true)
	h.as("builder", true) // a listener of a role another hub hosts
	poll.For(t, 5*time.Second, func() error {
		got := h.b.ListenerRoles()
		slices.Sort(got)
		return poll.Want(slices.Equal(got, []string{"architect", "builder", "oracle", "user"}), "listeners %v", got)
	})
	tests := []struct {
		role string
		want broker.Served
	}{
		{"architect", broker.Served{Pane: true, Listening: true}},
		{"oracle", broker.Served{Listening: true}},
		{"scout", broker.Served{}},
		{"builder", broker.Served{}},
		{"user", broker.Served{}},
		{"system", broker.Served{}},
		{"nobody", broker.Served{}},
	}
	for _, tt := range tests {
		if got := h.b.Serves(tt.role); got != tt.want {
			t.Errorf("Serves(%q) = %+v, want %+v", tt.role, got, tt.want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rm := broker.RemoteMessage{MessageID: "far-1", From: "builder", Target: "oracle", Seq: 4, Header: "BUILDER",
		Content: "(BUILDER #4): from afar", Hub: "hub-b"}
	done := make(chan error, 1)
	go func() { done <- h.b.AcceptRemote(ctx, rm, nil) }()
	m := decode[proto.Message](t, nextOf(t, lis, proto.TypeMessage))
	if m.MessageID != "far-1" || m.From != "builder" {
		t.Fatalf("listener got %+v", m)
	}
	if err := <-done; err != nil {
		t.Fatalf("AcceptRemote: %v", err)
	}
	if r, _ := h.ledger.Get(ctx, "far-1"); r.AckStatus != status.DeliveredWebSocket || r.Direction != "inbound" {
		t.Fatalf("row %+v", r)
	}

	refusals := []struct {
		name   string
		target string
		from   string
		want   error
	}{
		{"a ws role with no listener now", "scout", "builder", broker.ErrRemoteNotServed},
		{"a role another hub hosts", "builder", "architect", broker.ErrRemoteRefused},
		{"a sender this hub serves by a listener", "architect", "oracle", broker.ErrRemoteRefused},
	}
	for i, tt := range refusals {
		rm := broker.RemoteMessage{MessageID: "far-x" + itoa(i), From: tt.from, Target: tt.target, Content: "x", Hub: "hub-b"}
		if err := h.b.AcceptRemote(ctx, rm, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s: AcceptRemote = %v, want %v", tt.name, err, tt.want)
		}
	}
}
