package report

import (
	"slices"
	"strings"
	"testing"
)

// TestOpenObligationsOneRule: `hm status`, the cockpit and the briefing
// list the same open obligations for a session, from one query: those of the session and of the one before it (issue #34: after
// a restart the cockpit said "none open" while the briefing listed one).
func TestOpenObligationsOneRule(t *testing.T) {
	t.Parallel()
	l := buildFixture(t, t.TempDir())
	ctx := ctxT(t)
	cases := []struct {
		name    string
		session string
		role    string
		want    []string // message ids, oldest first
	}{
		{"the handed-off session and the one before it", "app-session-7", "", []string{"m6-01", "m7-03"}},
		{"after a restart the last session's are carried", "app-session-8", "", []string{"m7-03"}},
		{"a restart later they are history", "app-session-9", "", nil},
		{"the owner's", "app-session-8", "oracle", []string{"m7-03"}},
		{"the requester's", "app-session-8", "architect", []string{"m7-03"}},
		{"another role's", "app-session-8", "builder", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{SessionID: tc.session, Roles: fixtureRoles}
			obs, more, err := OpenObligations(ctx, l, o, tc.role, ObligationListLimit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ob := range obs {
				got = append(got, ob.MessageID)
				if ob.Body == "" || ob.Target == "" {
					t.Errorf("%s: no body or target: %+v", ob.MessageID, ob)
				}
			}
			if more || !slices.Equal(got, tc.want) {
				t.Fatalf("OpenObligations(%s, %q) = %v (more %v), want %v", tc.session, tc.role, got, more, tc.want)
			}
			if tc.role != "" {
				return
			}
			briefing, err := Briefing(ctx, l, o)
			if err != nil {
				t.Fatal(err)
			}
			if listed := obligationSection(string(briefing)); listed != len(tc.want) {
				t.Errorf("the briefing for %s lists %d open obligations, the query %d:\n%s", tc.session, listed, len(tc.want), briefing)
			}
		})
	}
}

// obligationSection counts the table rows of a document's Open
// Obligations section.
func obligationSection(md string) int {
	_, sec, _ := strings.Cut(md, "## Open Obligations")
	sec, _, _ = strings.Cut(sec, "\n## ")
	n := 0
	for line := range strings.Lines(sec) {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| ref ") && !strings.HasPrefix(line, "| --- ") {
			n++
		}
	}
	return n
}
