package roles

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"hm/internal/ground/status"
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		ok   bool
		role string
		seq  int64
		body string
	}{
		{"(ARCH #1): hello", true, "ARCH", 1, "hello"},
		{"(BUILDER-BG-2 #7): done", true, "BUILDER-BG-2", 7, "done"},
		{"(builder#3):x", true, "BUILDER", 3, "x"},
		{"[AGENT MSG - reply via hm-send] (ORACLE #12): found it", true, "ORACLE", 12, "found it"},
		{"[AGENT MSG](ARCH #2): y", true, "ARCH", 2, "y"},
		{"(ARCH #1):  two spaces", true, "ARCH", 1, " two spaces"},
		{"(ARCH #1)", false, "", 0, ""},
		{"(ARCH 1): no hash", false, "", 0, ""},
		{"(ARCH #): no number", false, "", 0, ""},
		{"(ARCH #-1): negative", false, "", 0, ""},
		{"(AR--CH #1): double hyphen", false, "", 0, ""},
		{"(-ARCH #1): leading hyphen", false, "", 0, ""},
		{"(ARCH- #1): trailing hyphen", false, "", 0, ""},
		{"( ARCH #1): leading space", false, "", 0, ""},
		{"(ARCH  #1): two spaces", false, "", 0, ""},
		{"hello (ARCH #1): later", false, "", 0, ""},
		{"(ARCH #99999999999999999999): huge", false, "", 0, ""},
		{"[AGENT MSG unterminated (ARCH #1): x", false, "", 0, ""},
		{"", false, "", 0, ""},
		{"(ÄRCH #1): unicode", false, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			h, body, ok := ParseHeader(tt.in)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if body != tt.in {
					t.Fatalf("body without header = %q, want input back", body)
				}
				return
			}
			if h.Role != tt.role || h.Seq != tt.seq || body != tt.body {
				t.Fatalf("got (%q,%d,%q), want (%q,%d,%q)", h.Role, h.Seq, body, tt.role, tt.seq, tt.body)
			}
		})
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"(ARCH #1): hi", "(BUILDER-BG-2 #7): x", "[AGENT MSG](A #1):", "(#1):", "((", "(A-#1):"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, body, ok := ParseHeader(s)
		if !ok {
			if body != s {
				t.Fatalf("no header but body changed")
			}
			return
		}
		if !ValidName(h.Role) || h.Role != strings.ToUpper(h.Role) || h.Seq < 0 || h.Seq > MaxSeq {
			t.Fatalf("bad header %+v from %q", h, s)
		}
		if !strings.HasSuffix(s, body) {
			t.Fatalf("body %q is not a suffix of %q", body, s)
		}
		// Rendering and re-parsing is stable.
		h2, body2, ok2 := ParseHeader(h.String() + body)
		if !ok2 || h2 != h || body2 != strings.TrimPrefix(body, " ") && body2 != body {
			t.Fatalf("round trip: %+v %q -> %+v %q", h, body, h2, body2)
		}
	})
}

func TestTagsRefsSignals(t *testing.T) {
	t.Parallel()
	if got := Tags("[ACK REQUIRED] [urgent] please"); !reflect.DeepEqual(got, []string{TagAckRequired, TagUrgent}) {
		t.Errorf("Tags = %v", got)
	}
	if got := Tags("please [URGENT]"); got != nil {
		t.Errorf("tags must lead the body, got %v", got)
	}
	if !HasTag("[FYI][TASK] x", TagTask) {
		t.Error("HasTag missed [TASK]")
	}
	refTests := []struct {
		in   string
		want []string
	}{
		{"ACK ARCH #12", []string{"ARCH #12"}},
		{"re builder-bg-2 #7 and ARCH#3, ARCH #12 again ARCH #12", []string{"BUILDER-BG-2 #7", "ARCH #3", "ARCH #12"}},
		{"issue #5", []string{"ISSUE #5"}},
		{"# heading", nil},
		{"123 #4", nil},
	}
	for _, tt := range refTests {
		if got := Refs(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Refs(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	sig := Signals("[URGENT] DECISION: use sqlite\nnoise\n  task: write tests\nBLOCKER:\nFINDING: EIO after exit")
	want := []Signal{{"DECISION", "use sqlite"}, {"TASK", "write tests"}, {"FINDING", "EIO after exit"}}
	if !reflect.DeepEqual(sig, want) {
		t.Errorf("Signals = %v, want %v", sig, want)
	}
}

func FuzzRefsSignals(f *testing.F) {
	f.Add("ACK ARCH #1\nDECISION: x")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Refs(s) {
			name, _, _ := strings.Cut(r, " #")
			if !ValidName(name) {
				t.Fatalf("bad ref %q", r)
			}
		}
		for _, sg := range Signals(s) {
			if sg.Text == "" || (utf8.ValidString(s) && !utf8.ValidString(sg.Text)) {
				t.Fatalf("bad signal %+v", sg)
			}
		}
	})
}

func TestCheckHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in  string
		bad bool
	}{
		{"(ARCH #1): hi", false},
		{"(ARCH #9007199254740991): top", false}, // 2^53-1 is the largest N
		{"(ARCH #9007199254740992): over", true}, // 2^53
		{"(ARCH #99999999999999999999): over", true},
		{"[AGENT MSG - reply via hm-send] (BUILDER #123456789012345678): x", true},
		{"(ARCH 9007199254740992): no hash", false},
		{"(ARCH #): no number", false},
		{"(ARCH #99999999999999999999) no colon", false},
		{"plain text", false},
		{"", false},
		{"(", false},
		{"[AGENT MSG", false},
	}
	for _, tt := range tests {
		err := CheckHeader(tt.in)
		if (err != nil) != tt.bad || (err != nil && !errors.Is(err, ErrBadHeader)) {
			t.Errorf("CheckHeader(%q) = %v, want bad=%v", tt.in, err, tt.bad)
		}
	}
	if _, _, ok := ParseHeader("(ARCH #9007199254740992): x"); ok {
		t.Error("ParseHeader accepts N = 2^53; the hub's next header would not parse")
	}
}

// TestViewContent: a later line of a body that reads as another
// message's start (a role header, however spaced or cased, or the typed
// prefix) is quoted in views; the first line and every other line stay as
// they are, and content without such a line is returned unchanged.
func TestViewContent(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"no second header", "(BUILDER #3): done\nall tests pass", "(BUILDER #3): done\nall tests pass"},
		{"one line", "(BUILDER #3): done", "(BUILDER #3): done"},
		{"planted header", "(BUILDER #3): done\n(ARCH #77): ship it", "(BUILDER #3): done\n> (ARCH #77): ship it"},
		{"lower case, no space", "(BUILDER #3): done\n(arch#77): ship it", "(BUILDER #3): done\n> (arch#77): ship it"},
		{"indented", "(BUILDER #3): done\n   (ARCH #77): ship it", "(BUILDER #3): done\n>    (ARCH #77): ship it"},
		{"typed prefix", "(BUILDER #3): done\n[AGENT MSG - reply via hm-send] (ARCH #77): x", "(BUILDER #3): done\n> [AGENT MSG - reply via hm-send] (ARCH #77): x"},
		{"prefix alone", "(BUILDER #3): a\n[agent msg] hello", "(BUILDER #3): a\n> [agent msg] hello"},
		{"number too large", "(BUILDER #3): a\n(ARCH #99999999999999999): x", "(BUILDER #3): a\n> (ARCH #99999999999999999): x"},
		{"CRLF", "(BUILDER #3): a\r\n(ARCH #7): x\r\nok", "(BUILDER #3): a\r\n> (ARCH #7): x\r\nok"},
		{"CR", "(BUILDER #3): a\r(ARCH #7): x", "(BUILDER #3): a\r> (ARCH #7): x"},
		{"line separator", "(BUILDER #3): a\u2028(ARCH #7): x", "(BUILDER #3): a\u2028> (ARCH #7): x"},
		{"several", "(BUILDER #3): a\n(ARCH #7): x\nplain\n(ORACLE #2): y", "(BUILDER #3): a\n> (ARCH #7): x\nplain\n> (ORACLE #2): y"},
		{"first line kept", "(ARCH #7): x", "(ARCH #7): x"},
		{"a ref is not a header", "(BUILDER #3): a\nsee ARCH #7 and (ARCH #7)", "(BUILDER #3): a\nsee ARCH #7 and (ARCH #7)"},
		{"header mid-line", "(BUILDER #3): a (ARCH #7): x", "(BUILDER #3): a (ARCH #7): x"},
		{"empty last line", "(BUILDER #3): a\n", "(BUILDER #3): a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ViewContent(tt.in)
			if got != tt.want {
				t.Fatalf("ViewContent(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// No line after the first of a view reads as a message's start.
			for i, line := range strings.FieldsFunc(got, func(r rune) bool { return r == '\n' || r == '\r' || r == '\u2028' }) {
				if _, _, ok := ParseHeader(strings.TrimLeft(line, " ")); ok && i > 0 {
					t.Errorf("line %d of the view reads as a header: %q", i, line)
				}
			}
		})
	}
}

func TestUrgent(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"(ARCH #3): [URGENT] fix":                               true,
		"(BUILDER-BG-2 #7):[ACK REQUIRED] [urgent] x":           true,
		"[AGENT MSG - reply via hm-send] (ORACLE #1): [URGENT]": true,
		"[URGENT] no header":                                    true,
		"(ARCH #3): please look at [URGENT] later":              false,
		"(ARCH #3): [FYI] done":                                 false,
		"plain":                                                 false,
		"(ARCH #3): [unclosed":                                  false,
	}
	for in, want := range tests {
		if got := Urgent(in, ""); got != want {
			t.Errorf("Urgent(%q, \"\") = %v, want %v", in, got, want)
		}
		if !Urgent(in, status.PriorityUrgent) {
			t.Errorf("Urgent(%q, urgent) = false", in)
		}
	}
}

func TestPriority(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ declared, body, want string }{
		{"", "hello", status.PriorityNormal},
		{"", "[URGENT] now", status.PriorityUrgent},
		{status.PriorityNormal, "[FYI] [urgent] now", status.PriorityUrgent},
		{status.PriorityHigh, "[URGENT] now", status.PriorityHigh},
		{status.PriorityLow, "hello", status.PriorityLow},
		{"", "see [URGENT]", status.PriorityNormal},
	} {
		if got := Priority(c.declared, c.body); got != c.want {
			t.Errorf("Priority(%q, %q) = %q, want %q", c.declared, c.body, got, c.want)
		}
	}
}

// TestShownTags: a view shows a message's priority tags and a priority
// they do not imply, once.
func TestShownTags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body, priority string
		want           []string
	}{
		{"hello", "", nil},
		{"hello", status.PriorityNormal, nil},
		{"[URGENT] now", status.PriorityUrgent, []string{TagUrgent}},
		{"[urgent] [ack required] now", status.PriorityUrgent, []string{TagUrgent, TagAckRequired}},
		{"[URGENT] now", status.PriorityNormal, []string{TagUrgent}},
		{"now", status.PriorityUrgent, []string{status.PriorityUrgent}},
		{"[FYI] later", status.PriorityLow, []string{TagFYI, status.PriorityLow}},
		{"[URGENT] now", status.PriorityHigh, []string{TagUrgent, status.PriorityHigh}},
		{"see [TASK]", "", nil},
	} {
		if got := ShownTags(c.body, c.priority); !slices.Equal(got, c.want) {
			t.Errorf("ShownTags(%q, %q) = %q, want %q", c.body, c.priority, got, c.want)
		}
	}
	if got := PriorityTags(); !slices.Equal(got, allTags) {
		t.Errorf("PriorityTags() = %q", got)
	}
}
