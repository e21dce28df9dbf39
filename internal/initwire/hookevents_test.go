package initwire

import (
	"slices"
	"strings"
	"testing"
	"time"

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
		for _, s := range Hooks(agent) {
			f := strings.Fields(s.Command)
			if len(f) < 4 || f[0] != "hm" || f[1] != "hook" || f[2] != agent || f[3] != s.Event {
				t.Errorf("%s: hook command %q, want hm hook %s %s", agent, s.Command, agent, s.Event)
				continue
			}
			ev, err := hook.Lookup(agent, s.Event)
			if err != nil {
				t.Errorf("%s: hm init wires %s, which hm hook does not act on: %v", agent, s.Event, err)
				continue
			}
			// The waiting hook: --wait D, run in the background
			// (asyncRewake), which only Claude's Stop has.
			if s.AsyncRewake {
				if _, err := ev.Waiting(); err != nil || len(f) != 6 || f[4] != "--wait" || s.Timeout <= 0 {
					t.Errorf("%s: asyncRewake hook %q (timeout %d): want hm hook %s %s --wait D with a timeout (%v)", agent, s.Command, s.Timeout, agent, s.Event, err)
				} else if d, err := time.ParseDuration(f[5]); err != nil || d >= time.Duration(s.Timeout)*time.Second {
					t.Errorf("%s: --wait %s must end before the CLI's timeout %ds", agent, f[5], s.Timeout)
				}
				continue
			}
			if len(f) != 4 {
				t.Errorf("%s: hook command %q, want hm hook %s %s", agent, s.Command, agent, s.Event)
			}
			wired = append(wired, s.Event)
		}
		if want := hook.Names(agent); !slices.Equal(wired, want) {
			t.Errorf("%s: hm init wires %v, hm hook acts on %v", agent, wired, want)
		}
	}
}

// TestHookRuns: a handler already wired counts as hm's hook when it runs
// the same hm hook command (hm by any path, further flags allowed); the
// waiting Stop hook (--wait) and the plain one are told apart, so that
// wiring one never stands for the other.
func TestHookRuns(t *testing.T) {
	t.Parallel()
	var plain, waiting Hook
	for _, h := range Hooks("claude") {
		if h.Event == "Stop" && h.AsyncRewake {
			waiting = h
		} else if h.Event == "Stop" {
			plain = h
		}
	}
	tests := []struct {
		cmd                 string
		runsPlain, runsWait bool
	}{
		{"hm hook claude Stop", true, false},
		{"/usr/local/bin/hm hook claude Stop --port 9901", true, false},
		{"hm hook claude Stop --wait 55m", false, true},
		{"hm  hook claude Stop --wait=10m --root /x", false, true},
		{"hm hook claude Stop -wait 1m", false, true},
		{"hm hook codex Stop", false, false},
		{"hm hook claude SessionStart", false, false},
		{"hm receipt", false, false},
		{"notify-send Stop", false, false},
	}
	for _, tt := range tests {
		if got := plain.Runs(tt.cmd); got != tt.runsPlain {
			t.Errorf("%q runs the plain Stop hook: %v, want %v", tt.cmd, got, tt.runsPlain)
		}
		if got := waiting.Runs(tt.cmd); got != tt.runsWait {
			t.Errorf("%q runs the waiting Stop hook: %v, want %v", tt.cmd, got, tt.runsWait)
		}
	}
}
