package roles

import (
	"fmt"
	"sort"
	"strings"
)

// UnknownTargetError explains a target that names nobody: the name, the
// closest known target when one is near enough to be a typo, and the targets
// there are. It matches ErrInvalidTarget with errors.Is.
type UnknownTargetError struct {
	Name       string
	Suggestion string   // "" when nothing is close
	Targets    []string // the canonical targets, for the message
}

func (e *UnknownTargetError) Error() string {
	return fmt.Sprintf("%s: %s", ErrInvalidTarget, e.Reason())
}

// Reason is the error's sentence without its code: what the hub sends as
// a refusal's reason and hm-send prints when it checks a target offline.
func (e *UnknownTargetError) Reason() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q is not a target", clip(e.Name, 64))
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %s?", e.Suggestion)
	}
	b.WriteString(" (targets: " + strings.Join(e.Targets, ", ") + ")")
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidTarget) true.
func (e *UnknownTargetError) Unwrap() error { return ErrInvalidTarget }

// Targets returns the canonical target names: every member's role, then the
// special targets all, user and telegram.
func (t *Team) Targets() []string {
	return append(t.Roles(), RoleAll, RoleUser, RoleTelegram)
}

// unknownTarget builds the error for a name Resolve could not resolve,
// suggesting the known name (role, pane id, header, alias or special
// target) nearest to it (Suggest), named by its role.
func (t *Team) unknownTarget(name string) error {
	names := append(t.Targets(), t.Aliases()...)
	for k := range t.index {
		names = append(names, k)
	}
	best := Suggest(strings.ToLower(strings.TrimSpace(name)), names)
	if role, ok := Aliases[best]; ok {
		best = role
	} else if m, ok := t.Lookup(best); ok {
		best = m.Role
	}
	return &UnknownTargetError{Name: name, Suggestion: best, Targets: t.Targets()}
}

// Suggest returns the name among names nearest to name when it is near
// enough to be a typo: at most two edits (a swap of neighbours is one),
// and at most a third of name's runes; else "". Of names equally near, the
// first in sorted order wins. It is hm's one "did you mean" rule: for
// targets, commands and subcommands alike.
func Suggest(name string, names []string) string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	best, bestD := "", 3
	if n := len([]rune(name)) / 3; n < bestD-1 {
		bestD = n + 1
	}
	for _, n := range sorted {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Aliases returns the alias names (SPEC §3) whose role is in this team.
func (t *Team) Aliases() []string {
	var out []string
	for a, role := range Aliases {
		if _, ok := t.Lookup(role); ok {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// editDistance is the Levenshtein distance between a and b in runes,
// counting a swap of two neighbours as one edit (so "biulder" is one edit
// from "builder").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
