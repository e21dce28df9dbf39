package broker

import (
	"testing"
	"time"

	"hm/broker/proto"
)

// statePanes reports one fixed pane state for every role it hosts.
type statePanes struct {
	state string
	last  time.Time
	host  bool
}

func (p statePanes) Hosted(string) bool           { return p.host }
func (p statePanes) Deliver(string, PaneDelivery) {}
func (p statePanes) Health(string) (string, time.Time, bool) {
	return p.state, p.last, p.host
}

// TestHealthStates covers every health-check outcome, with and without a
// hosted pane and a last-seen time.
func TestHealthStates(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		name     string
		panes    Panes
		seenAgo  time.Duration // <0: never seen
		status   string
		healthy  bool
		lastSeen int64
	}{
		{"no panes, never seen", nil, -1, "offline", false, 0},
		{"no panes, seen recently", nil, time.Second, "healthy", true, now.Add(-time.Second).UnixMilli()},
		{"no panes, seen long ago", nil, time.Hour, "stale", false, now.Add(-time.Hour).UnixMilli()},
		{"pane not hosted, never seen", statePanes{}, -1, "offline", false, 0},
		{"pane idle, never seen", statePanes{state: "idle", host: true}, -1, "healthy", true, 0},
		{"pane idle, output after frame", statePanes{state: "idle", last: now.Add(-time.Second), host: true}, time.Hour, "healthy", true, now.Add(-time.Second).UnixMilli()},
		{"pane busy, old frame", statePanes{state: "busy", host: true}, time.Hour, "healthy", true, now.Add(-time.Hour).UnixMilli()},
		{"pane exited", statePanes{state: "exited", last: now.Add(-time.Minute), host: true}, -1, "exited", false, now.Add(-time.Minute).UnixMilli()},
		{"pane starting, never seen", statePanes{state: "starting", host: true}, -1, "starting", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{Now: func() time.Time { return now }}, Deps{Panes: tc.panes})
			defer b.Close()
			if tc.seenAgo >= 0 {
				b.lastSeen["builder"] = now.Add(-tc.seenAgo)
			}
			r := b.health(proto.Frame{Type: proto.TypeHealthCheck, Target: "builder", RequestID: "r", StaleAfterMs: 60_000})
			if r.Status != tc.status || r.Healthy != tc.healthy || r.LastSeen != tc.lastSeen || r.Role != "builder" || r.RequestID != "r" {
				t.Fatalf("health = %+v; want status %q healthy %v lastSeen %d", r, tc.status, tc.healthy, tc.lastSeen)
			}
			if tc.lastSeen != 0 && r.AgeMs != now.UnixMilli()-tc.lastSeen {
				t.Errorf("ageMs = %d, want %d", r.AgeMs, now.UnixMilli()-tc.lastSeen)
			}
		})
	}
}
