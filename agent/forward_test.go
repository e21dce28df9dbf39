package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestForwardQueued: a pane replaced by another of the same role (hm
// reload restarting it) hands over what it had queued, what is enqueued
// into it afterwards and what a claim gives back to it; the new pane types
// each message once, the old one none.
func TestForwardQueued(t *testing.T) {
	t.Parallel()
	// The old program shows a dialog for the whole test: hm types nothing
	// into it, so its messages stay queued.
	oldSpec, oldLog := fakeSpec(t, "FAKEAGENT_DIALOG_MS=600000")
	oldSpec.Timing.Screen.Blocked = []string{"Do you want to proceed?"}
	old := startPane(t, oldSpec)
	poll.For(t, 30*time.Second, func() error {
		r, _ := old.Profile().Classify(old.Screen())
		return poll.Want(r == Blocked, "the old pane shows its dialog (readiness %v)", r)
	})
	stages := newStageLog()
	delivery := func(id string, claimable bool) Delivery {
		return Delivery{MessageID: id, Content: "(ARCH #1): forward " + id, Claimable: claimable, Report: stages.reporter(id)}
	}
	old.Enqueue(delivery("m-1", false))
	old.Enqueue(delivery("m-2", false))
	old.Enqueue(delivery("m-3", true))
	claimed := old.Claim(1, false)
	if len(claimed) != 1 || claimed[0].MessageID != "m-3" {
		t.Fatalf("claim took %+v, want m-3", claimed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	newSpec, newLog := fakeSpec(t)
	next := startPane(t, newSpec)
	old.ForwardQueued(next)
	old.Enqueue(delivery("m-4", false)) // a dispatch that found the old pane
	old.Unclaim(claimed...)             // the claim's taker did not deliver it

	ids := []string{"m-1", "m-2", "m-3", "m-4"}
	poll.For(t, 60*time.Second, func() error {
		for _, id := range ids {
			if !stages.final(id) {
				return fmt.Errorf("%s not final: %+v", id, stages.get(id))
			}
		}
		return nil
	})
	typed := map[string]int{}
	for _, p := range readPrompts(t, newLog) {
		for _, id := range ids {
			if strings.Contains(p.Prompt, "[hm:"+id+"]") {
				typed[id]++
			}
		}
	}
	for _, id := range ids {
		if typed[id] != 1 {
			t.Errorf("%s typed %d times into the new program, want 1 (%v)", id, typed[id], typed)
		}
	}
	for _, p := range readPrompts(t, oldLog) {
		if strings.Contains(p.Prompt, "[hm:") {
			t.Errorf("the old program got a message: %q", p.Prompt)
		}
	}
}

// TestSpecSameRun: a spec runs its program as another does when what the
// program sees is the same (command, profile as resolved, directory,
// environment in any order, names); what only the hub uses is not
// compared.
func TestSpecSameRun(t *testing.T) {
	t.Parallel()
	base := Spec{Role: "scribe", PaneID: "4", Header: "SCRIBE", Command: "fakeagent --x", Profile: "held",
		Profiles: map[string]Profile{"held": {Idle: time.Second}, "other": {Idle: time.Second}},
		Dir:      "/r", Env: []string{"A=1", "B=2"}, LogPath: "/r/a.log"}
	tests := []struct {
		name   string
		change func(s *Spec)
		same   bool
	}{
		{"identical", func(*Spec) {}, true},
		{"environment reordered", func(s *Spec) { s.Env = []string{"B=2", "A=1"} }, true},
		{"log path and restarts", func(s *Spec) { s.LogPath, s.Restart, s.KillGrace = "/r/b.log", true, time.Minute }, true},
		{"another profile entry changed", func(s *Spec) { s.Profiles = map[string]Profile{"held": {Idle: time.Second}} }, true},
		{"command", func(s *Spec) { s.Command = "fakeagent --y" }, false},
		{"profile name", func(s *Spec) { s.Profile = "other2" }, false},
		{"its profile entry changed", func(s *Spec) { s.Profiles = map[string]Profile{"held": {Idle: 2 * time.Second}} }, false},
		{"timing", func(s *Spec) { s.Timing.Verify = time.Second }, false},
		{"environment", func(s *Spec) { s.Env = []string{"A=1", "B=3"} }, false},
		{"directory", func(s *Spec) { s.Dir = "/q" }, false},
		{"header", func(s *Spec) { s.Header = "SCRIBE2" }, false},
		{"pane id", func(s *Spec) { s.PaneID = "5" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Profiles = map[string]Profile{"held": {Idle: time.Second}, "other": {Idle: time.Second}}
			tt.change(&s)
			if got := s.SameRun(base); got != tt.same {
				t.Errorf("SameRun = %v, want %v", got, tt.same)
			}
		})
	}
}
