package journal

import (
	"errors"
	"slices"
	"testing"

	"hm/internal/ground/status"
)

// TestChangeRules builds every Change the constructors make, in each of
// their forms, and checks it against changeRules: the status, stage, error
// code, attempt and detail keys it states. Every rule has a sample and
// every sample a rule.
func TestChangeRules(t *testing.T) {
	boom := errors.New("boom")
	samples := []struct {
		rule string
		c    Change
	}{
		{"Typed", Typed("m", "builder")},
		{"Submitted", Submitted("m", "builder", true)},
		{"Submitted", Submitted("m", "builder", false)},
		{"EnteredBeforeStop", EnteredBeforeStop("m", "builder")},
		{"Attempt", Attempt("m", "builder", boom)},
		{"Interrupted", Interrupted("m", "builder")},
		{"Cleared", Cleared("m", "builder", "held text")},
		{"Stuck", Stuck("m", "builder", boom)},
		{"PaneFailed", PaneFailed("m", status.CodePaneFailed, "builder", "boom")},
		{"PaneFailed", PaneFailed("m", status.CodeNoRoute, "builder-bg-1", "builder-bg-1 is not running")},
		{"SendFailed", SendFailed("m", status.CodeTelegramFailed, "boom")},
		{"Unroutable", Unroutable("m", status.CodeNoRoute, "no such role")},
		{"Unroutable", Unroutable("m", status.CodeTelegramUnconfigured, "no chat")},
		{"Expired", Expired("m", 5000, "")},
		{"Expired", Expired("m", 5000, "a lifecycle notice of app-session-1, which ended")},
		{"Shown", Shown("m")},
		{"Delivered", Delivered("m", 3, false)},
		{"Delivered", Delivered("m", 3, true)},
		{"Context", Context("m", "builder", "")},
		{"Context", Context("m", "builder", "claude Stop --wait")},
		{"ContextFromNote", ContextFromNote("m", "builder", "claude PostToolUse")},
		{"Acked", Acked("m", "builder", "")},
		{"Acked", Acked("m", "builder", "claude UserPromptSubmit")},
		{"Merged", Merged("m", "builder", "", []string{"n"})},
		{"TelegramSent", TelegramSent("m")},
		{"TelegramPartSent", TelegramPartSent("m-part-1")},
		{"TelegramFailed", TelegramFailed("m", boom)},
		{"Forwarded", Forwarded("m", "")},
		{"Forwarded", Forwarded("m", "hub-b")},
		{"ForwardedCopies", ForwardedCopies("m", 2)},
		{"QueuedRemote", QueuedRemote("m", boom)},
		{"Received", Received("m", "hub-b")},
		{"Repeated", Repeated("m", "trigger", "a.txt", "id-1")},
	}
	rules := ChangeRules()
	for _, s := range samples {
		i := slices.IndexFunc(rules, func(r ChangeRule) bool { return r.Name == s.rule })
		if i < 0 {
			t.Errorf("%s: no rule in changeRules", s.rule)
			continue
		}
		if err := rules[i].check(s.c); err != nil {
			t.Errorf("%s %+v: %v", s.rule, s.c, err)
		}
	}
	for _, r := range rules {
		if !slices.ContainsFunc(samples, func(s struct {
			rule string
			c    Change
		}) bool {
			return s.rule == r.Name
		}) {
			t.Errorf("rule %s has no sample in this test", r.Name)
		}
	}
}
