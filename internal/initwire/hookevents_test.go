package initwire

import (
	"slices"
	"strings"
	"testing"

	"hm/internal/hook"
)

// TestWiredHooksAreHandled: every hook hm init wires runs an `hm hook`
// command that hm hook acts on, and hm init wires every event hm hook acts
// on, for each CLI of both (internal/hook is where hm hook keeps its list).
func TestWiredHooksAreHandled(t *testing.T) {
	t.Parallel()
	if !slices.Equal(Agents, hook.CLIs) {
		t.Errorf("hm init wires %v, hm hook speaks %v", Agents, hook.CLIs)
	}
	for _, agent := range Agents {
		var wired []string
		for _, s := range hookSpecs(agent) {
			f := strings.Fields(s.command)
			if len(f) != 4 || f[0] != "hm" || f[1] != "hook" || f[2] != agent || f[3] != s.event {
				t.Errorf("%s: hook command %q, want hm hook %s %s", agent, s.command, agent, s.event)
				continue
			}
			if _, err := hook.Lookup(agent, s.event); err != nil {
				t.Errorf("%s: hm init wires %s, which hm hook does not act on: %v", agent, s.event, err)
			}
			wired = append(wired, s.event)
		}
		if want := hook.Names(agent); !slices.Equal(wired, want) {
			t.Errorf("%s: hm init wires %v, hm hook acts on %v", agent, wired, want)
		}
	}
}
