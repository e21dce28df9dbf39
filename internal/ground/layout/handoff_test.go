package layout

import (
	"os"
	"testing"
)

// TestReadHandoff: the session handoff, else the briefing; a file of blanks
// does not count; neither: no path.
func TestReadHandoff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		session, briefing string // "" : no file
		want              string // "session", "briefing" or ""
	}{
		{"both", "# Handoff\n", "# Briefing\n", "session"},
		{"briefing only", "", "# Briefing\n", "briefing"},
		{"blank session", " \n\n", "# Briefing\n", "briefing"},
		{"neither", "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := Layout{Root: t.TempDir()}
			if err := os.MkdirAll(l.Handoffs(), 0o700); err != nil {
				t.Fatal(err)
			}
			for path, text := range map[string]string{l.Session(): tt.session, l.Briefing(): tt.briefing} {
				if text != "" {
					if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			path, text, err := l.ReadHandoff()
			want := map[string]string{"session": l.Session(), "briefing": l.Briefing()}[tt.want]
			wantText := map[string]string{"session": tt.session, "briefing": tt.briefing}[tt.want]
			if err != nil || path != want || text != wantText {
				t.Errorf("ReadHandoff = %q, %q, %v; want %q, %q", path, text, err, want, wantText)
			}
		})
	}
}
