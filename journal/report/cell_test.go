package report

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"hm/roles"
)

func TestCell(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 200)
	exact := strings.Repeat("é", CellMaxRunes)
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "hello world", "hello world"},
		{"pipe", "a|b", `a\|b`},
		{"pipes around", "|x|", `\|x\|`},
		{"already escaped pipe", `a\|b`, `a\\|b`},
		{"newlines", "line one\nline two\r\nline three", "line one line two line three"},
		{"runs of whitespace", "a \t\t  b\v\fc", "a b c"},
		{"trimmed", "  \n padded \n ", "padded"},
		{"unicode spaces", "a\u00a0\u2028b\u2029c\u0085d", "a b c d"},
		{"control characters dropped", "a\x1b[31mred\x1b[0m\x00b", "a[31mred[0mb"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"exactly the limit", exact, exact},
		{"over the limit", long, strings.Repeat("a", CellMaxRunes) + CellMarker},
		{"limit counts runes not bytes", strings.Repeat("ü", 181), strings.Repeat("ü", CellMaxRunes) + CellMarker},
		{"cut drops a trailing space", strings.Repeat("b", 179) + " cdef", strings.Repeat("b", 179) + CellMarker},
		{"cut after collapsing", strings.Repeat("x\n\n", 100), strings.TrimSpace(strings.Repeat("x ", 90)) + CellMarker},
		{"pipe at the cut", strings.Repeat("p", 179) + "||", strings.Repeat("p", 179) + `\|` + CellMarker},
		{"markdown kept", "**bold** `code`", "**bold** `code`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Cell(c.in)
			if got != c.want {
				t.Errorf("Cell(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			checkCell(t, c.in, got)
		})
	}
}

// checkCell asserts Cell's invariants on one output.
func checkCell(t *testing.T, in, got string) {
	t.Helper()
	if !utf8.ValidString(got) {
		t.Fatalf("Cell(%q) = %q: invalid UTF-8", in, got)
	}
	for i := 0; i < len(got); i++ {
		if got[i] == '|' && (i == 0 || got[i-1] != '\\') {
			t.Fatalf("Cell(%q) = %q: unescaped '|' at byte %d", in, got, i)
		}
	}
	for _, r := range got {
		if r == '\n' || r == '\r' || (unicode.IsSpace(r) && r != ' ') || unicode.IsControl(r) {
			t.Fatalf("Cell(%q) = %q: contains %U", in, got, r)
		}
	}
	if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
		t.Fatalf("Cell(%q) = %q: whitespace not collapsed", in, got)
	}
	content := strings.ReplaceAll(got, `\|`, "|")
	cut := strings.HasSuffix(content, CellMarker) && utf8.RuneCountInString(content) > CellMaxRunes
	if cut {
		content = strings.TrimSuffix(content, CellMarker)
	}
	if n := utf8.RuneCountInString(content); n > CellMaxRunes {
		t.Fatalf("Cell(%q) = %q: %d runes of content, limit %d", in, got, n, CellMaxRunes)
	}
	// Idempotent on short, pipe-free content.
	if !cut && !strings.Contains(got, "|") && Cell(got) != got {
		t.Fatalf("Cell is not idempotent on %q", got)
	}
}

func FuzzCell(f *testing.F) {
	for _, s := range []string{"", "a|b", `\|`, "x\ny\r\nz", strings.Repeat("|", 400), strings.Repeat("ab ", 100),
		"\x00\x1b\u2028\u00a0", "\xff\xfe|", strings.Repeat("é|", 200), "(ARCH #1): [ACK REQUIRED] do | it\n\tnow"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkCell(t, s, Cell(s))
	})
}

func TestSessionLine(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 23, 59, 0, 0, time.UTC)
	for _, c := range []struct{ role, want string }{
		{"architect", "# SQUIDRUN SESSION: Architect - Started 2026-11-22"},
		{"builder", "# SQUIDRUN SESSION: Builder - Started 2026-11-22"},
		{"builder-bg-1", "# SQUIDRUN SESSION: Builder-Bg-1 - Started 2026-11-22"},
		{"ORACLE", "# SQUIDRUN SESSION: Oracle - Started 2026-11-22"},
		{"code_reviewer", "# SQUIDRUN SESSION: Code_Reviewer - Started 2026-11-22"},
		{"r2d2", "# SQUIDRUN SESSION: R2d2 - Started 2026-11-22"},
		{"", "# SQUIDRUN SESSION: Agent - Started 2026-11-22"},
	} {
		if got := SessionLine(c.role, now); got != c.want {
			t.Errorf("SessionLine(%q) = %q, want %q", c.role, got, c.want)
		}
	}
	// The date is the calendar date in now's own location.
	tokyo := time.FixedZone("JST", 9*3600)
	if got := SessionLine("architect", now.In(tokyo)); !strings.HasSuffix(got, "Started 2026-11-23") {
		t.Errorf("SessionLine in JST = %q, want the local date 2026-11-23", got)
	}
}

func TestFirstMessages(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	briefing := []byte("# Startup Briefing: app-session-8\n\nbody\n")
	got := ArchitectFirstMessage(briefing, now)
	want := "# SQUIDRUN SESSION: Architect - Started 2026-11-22\n\n# Startup Briefing: app-session-8\n\nbody\n"
	if got != want {
		t.Errorf("ArchitectFirstMessage = %q, want %q", got, want)
	}
	p := PaneFirstMessage("builder-bg-2", now, "/repo/.squidrun/handoffs/session.md")
	if !strings.HasPrefix(p, "# SQUIDRUN SESSION: Builder-Bg-2 - Started 2026-11-22\n\n") {
		t.Errorf("PaneFirstMessage starts wrong: %q", p)
	}
	if !strings.Contains(p, "/repo/.squidrun/handoffs/session.md") {
		t.Errorf("PaneFirstMessage lacks the handoff path: %q", p)
	}
}

func TestRolesFromTeam(t *testing.T) {
	t.Parallel()
	if got := RolesFromTeam(nil); got != nil {
		t.Errorf("RolesFromTeam(nil) = %v, want nil", got)
	}
	got := RolesFromTeam(roles.Default())
	if len(got) < 3 {
		t.Fatalf("RolesFromTeam(default) = %v, want at least the three main panes", got)
	}
	if want := (RoleInfo{Role: "architect", Header: "ARCH", PaneID: "1"}); got[0] != want {
		t.Errorf("first role = %+v, want %+v", got[0], want)
	}
}
