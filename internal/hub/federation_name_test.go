package hub_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/federation"
	"hm/internal/federation/natstest"
	"hm/internal/ground/poll"
	"hm/internal/hub"
)

// TestFederationHubNames: two hubs on one machine, two roots, no --hub,
// get two names and deliver to each other (before, both took the host
// name, ignored each other's presence as their own, and a message waited
// unseen); a hub whose --hub another live hub of the team uses is refused
// at start with the fix in its error; a remote role no hub hosts is shown
// as such.
func TestFederationHubNames(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	start := func(root, name, local, remote string) (*testHub, error) {
		return tryStartHubAt(t, root, hubConfig{settings: fedSettings(root, local, remote, "ws"), opts: func(o *hub.Options) {
			o.NATS = hub.NATSOptions{URL: srv.URL(), Team: fedTeam, Hub: name, PresenceEvery: 200 * time.Millisecond,
				OutboxEvery: 200 * time.Millisecond, ReconnectWait: 50 * time.Millisecond, AckWait: 1500 * time.Millisecond}
		}})
	}
	unhosted := func(th *testHub) []string { return th.h.Snapshot(ctxT(t)).Federation.Unhosted }

	a, err := start(t.TempDir(), "", "architect", "builder")
	if err != nil {
		t.Fatal(err)
	}
	// No hub hosts builder yet: said so.
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(slices.Equal(unhosted(a), []string{"builder"}), "unhosted %v", unhosted(a))
	})
	b, err := start(t.TempDir(), "", "builder", "architect")
	if err != nil {
		t.Fatal(err)
	}
	an, _, _ := a.h.Federated()
	bn, _, _ := b.h.Federated()
	if an == bn {
		t.Fatalf("both hubs are named %q", an)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(remoteHub(a, "builder") == bn && len(unhosted(a)) == 0, "a sees %v, unhosted %v", a.h.RemotePanes(), unhosted(a))
	})
	ack := send(t, a.as("architect", false), proto.Frame{Target: "builder", Content: "across hubs [hm:names-1]"})
	if !ack.OK {
		t.Fatalf("ack %+v", ack)
	}
	waitTypedOnce(t, b, "builder", []string{"names-1"})

	// A third hub, on another root, that takes the name of a live hub is refused.
	_, err = start(t.TempDir(), an, "architect", "builder")
	if !errors.Is(err, federation.ErrDuplicateHub) || !strings.Contains(err.Error(), an) || !strings.Contains(err.Error(), "--hub") {
		t.Fatalf("a second hub named %q: hub.Run = %v, want ErrDuplicateHub naming it and --hub", an, err)
	}
}
