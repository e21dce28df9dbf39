package agent

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestProfileFor(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name                string
		want                string
		idle, enter, verify time.Duration
	}{
		{"claude", "claude", 400 * ms, 120 * ms, 1500 * ms},
		{"Codex", "codex", 400 * ms, 250 * ms, 1500 * ms},
		{"gemini", "gemini", 400 * ms, 120 * ms, 1500 * ms},
		{"shell", "shell", 100 * ms, 30 * ms, 1500 * ms},
		{"default", "default", 400 * ms, 150 * ms, 1500 * ms},
		{"", "default", 400 * ms, 150 * ms, 1500 * ms},
		{"cursor-agent", "default", 400 * ms, 150 * ms, 1500 * ms},
	}
	for _, tc := range tests {
		p := ProfileFor(tc.name)
		if p.Name != tc.want || p.Idle != tc.idle || p.EnterDelay != tc.enter || p.Verify != tc.verify {
			t.Errorf("ProfileFor(%q) = %+v", tc.name, p)
		}
	}
	o := ProfileFor("codex").withOverrides(Profile{Idle: 5 * ms})
	if o.Idle != 5*ms || o.EnterDelay != 250*ms || o.Verify != 1500*ms || o.Name != "codex" {
		t.Errorf("override = %+v", o)
	}
}

func TestNeutralize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\tand\nnewline", "tab\tand\nnewline"},
		{"crlf\r\nline", "crlf\nline"},
		{"lone\rcr", "lone\ncr"},
		{"\x1b[31mred\x1b[0m", "␛[31mred␛[0m"},
		{"paste \x1b[200~x\x1b[201~", "paste ␛[200~x␛[201~"},
		{"bell\x07 nul\x00 ctrl-c\x03", "bell␇ nul␀ ctrl-c␃"},
		{"del\x7f", "del␡"},
		{"c1 \u009b31m \u0085", "c1 \uFFFD31m \uFFFD"},
		{"bad \xff\xfe utf8", "bad \uFFFD\uFFFD utf8"},
		{"héllo 日本 🚀", "héllo 日本 🚀"},
	}
	for _, tc := range tests {
		if got := Neutralize(tc.in); got != tc.want {
			t.Errorf("Neutralize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkNeutral fails when s holds anything Neutralize must remove.
func checkNeutral(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8: %q", s)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Fatalf("control %U left in %q", r, s)
		}
	}
}

func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"", "abc", "\x1b[201~", "\r\n\r", "\xff\x9b", "\u009b", "日本\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Neutralize(s)
		checkNeutral(t, out)
		if Neutralize(out) != out {
			t.Fatalf("not idempotent: %q -> %q", s, out)
		}
		if strings.Contains(s, "\x1b") == false && !strings.ContainsAny(s, "\r\x7f") && utf8.ValidString(s) && isClean(s) && out != s {
			t.Fatalf("clean input changed: %q -> %q", s, out)
		}
	})
}

func TestFileID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		want     string
		prefixed bool // want is a prefix (hash suffix added)
	}{
		{"hm-1700000000000-abc123", "hm-1700000000000-abc123", false},
		{"a.b_c-D", "a.b_c-D", false},
		{"../../etc/passwd", "_._.._etc_passwd-", true},
		{".hidden", "_hidden-", true},
		{"", "-", true},
		{strings.Repeat("x", 300), strings.Repeat("x", maxFileID) + "-", true},
	}
	for _, tc := range tests {
		got := fileID(tc.in)
		if tc.prefixed && !strings.HasPrefix(got, tc.want) || !tc.prefixed && got != tc.want {
			t.Errorf("fileID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if fileID("a/b") == fileID("a_b") {
		t.Error("distinct ids share a file")
	}
}

func FuzzFileID(f *testing.F) {
	for _, s := range []string{"hm-1-x", "../x", "/", ".", "a\x00b", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got := fileID(id)
		if got == "" || got == "." || got == ".." || strings.HasPrefix(got, ".") || len(got) > maxFileID+13 {
			t.Fatalf("fileID(%q) = %q", id, got)
		}
		for _, c := range []byte(got) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				t.Fatalf("fileID(%q) = %q has %q", id, got, c)
			}
		}
		if filepath.Base(got) != got {
			t.Fatalf("fileID(%q) = %q is not a plain name", id, got)
		}
	})
}

// composeCases are the golden cases for compose.
var composeCases = []struct {
	name string
	o    composeOpts
}{
	{"single-line", composeOpts{ID: "hm-1", Content: "(ARCH #1): hello"}},
	{"single-line-paste", composeOpts{ID: "hm-2", Content: "(ARCH #2): hello", Bracketed: true}},
	{"multi-line-paste", composeOpts{ID: "hm-3", Content: "(ARCH #3): one\ntwo\n\tthree\n", Bracketed: true, MultiLine: true}},
	{"multi-line-paste-one-line-profile", composeOpts{ID: "hm-3b", Content: "(ARCH #3): one\ntwo\n\tthree\n", Bracketed: true}},
	{"multi-line-no-paste", composeOpts{ID: "hm-4", Content: "(ARCH #4): one\ntwo"}},
	{"tabs-no-paste", composeOpts{ID: "hm-5", Content: "(ARCH #5): a\tb"}},
	{"long-body-paste", composeOpts{ID: "hm-6", Content: "(ARCH #6): " + strings.Repeat("y", 5000), Bracketed: true}},
	{"shell", composeOpts{ID: "hm-7", Content: "(ARCH #7): $(rm -rf /)", Shell: true}},
	{"shell-paste", composeOpts{ID: "hm-8", Content: "(ARCH #8): `id`", Shell: true, Bracketed: true}},
	{"shell-multi-line", composeOpts{ID: "hm-9", Content: "(ARCH #9): a\nrm -rf /", Shell: true, Bracketed: true}},
	{"shell-near-limit", composeOpts{ID: "hm-10", Content: "(ARCH #10): " + strings.Repeat("z", 3990), Shell: true}},
	{"escapes", composeOpts{ID: "hm-11", Content: "(ARCH #11): \x1b[201~\rboom\x1b]0;t\x07", Bracketed: true, MultiLine: true}},
	{"hostile-id", composeOpts{ID: "id] [hm:other\n", Content: "x"}},
	{"no-id", composeOpts{Content: "(ARCH #13): no id"}},
	{"unicode-preview", composeOpts{ID: "hm-14", Content: "(ARCH #14): " + strings.Repeat("é", 200) + "\nmore"}},
}

func TestComposeGolden(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, tc := range composeCases {
		c := compose(tc.o, "/root/.squidrun/coord/full-agent-messages/"+fileID(tc.o.ID)+".txt")
		fmt.Fprintf(&b, "## %s\npointer: %v\ntext: %q\n\n", tc.name, c.Pointer, c.Text)
	}
	golden := filepath.Join("testdata", "compose.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("compose output differs from %s (run with -update after checking):\n%s", golden, b.String())
	}
}

func FuzzCompose(f *testing.F) {
	for _, tc := range composeCases {
		f.Add(tc.o.ID, tc.o.Content, tc.o.Shell, tc.o.Bracketed)
	}
	f.Fuzz(func(t *testing.T, id, content string, shell, bracketed bool) {
		for _, multi := range []bool{false, true} {
			fuzzCompose(t, id, content, shell, bracketed, multi)
		}
	})
}

// fuzzCompose checks one composition: a paste is whole, nothing escapes,
// a shell gets only an inert pointer line, the trailer ends the text (never
// on a line of its own), and a multi-line body is inline only as a paste to
// a multi-line profile.
func fuzzCompose(t *testing.T, id, content string, shell, bracketed, multi bool) {
	t.Helper()
	{
		c := compose(composeOpts{ID: id, Content: content, Shell: shell, Bracketed: bracketed, MultiLine: multi}, "/p/"+fileID(id)+".txt")
		text := c.Text
		if bracketed {
			if !strings.HasPrefix(text, PasteStart) || !strings.HasSuffix(text, PasteEnd) {
				t.Fatalf("paste markers missing: %q", text)
			}
			text = strings.TrimSuffix(strings.TrimPrefix(text, PasteStart), PasteEnd)
		}
		checkNeutral(t, text)
		if strings.Contains(text, "\x1b") {
			t.Fatalf("escape inside the text: %q", c.Text)
		}
		if shell {
			// Only ": '<pointer line>'", with nothing inside the quotes
			// that could end them, and the body in the pointer file.
			inner, ok := strings.CutPrefix(text, ": '"+AgentPrefix+"message in /p/")
			inner, ok2 := strings.CutSuffix(inner, "'")
			if !ok || !ok2 || strings.ContainsAny(inner, "'\\\n") || !c.Pointer {
				t.Fatalf("shell text is not an inert pointer line: %q", text)
			}
			if c.Body != shown(content) {
				t.Fatalf("pointer body differs from the content as shown")
			}
			return
		}
		if !strings.HasPrefix(text, AgentPrefix) {
			t.Fatalf("prefix missing: %q", text)
		}
		lines := strings.Count(text, "\n")
		if !(bracketed && multi) && lines != 0 {
			t.Fatalf("text must be one line: %q", text)
		}
		if id != "" && (!strings.HasSuffix(text, " "+Trailer(id)) || strings.HasSuffix(text, "\n"+Trailer(id))) {
			t.Fatalf("trailer missing or not ending the last line: %q", text)
		}
		if c.Pointer != (len(c.Body) > MaxInlineBody || strings.Contains(strings.Trim(c.Body, " \t\n"), "\n") && !(bracketed && multi)) {
			t.Fatalf("pointer decision %v for %q (bracketed %v, multi-line profile %v)", c.Pointer, content, bracketed, multi)
		}
		if !c.Pointer && len(text) > MaxInlineBody+len(AgentPrefix)+len(Trailer(id))+2+len(Neutralize(content))-len(c.Body)+64 {
			t.Fatalf("inline text too long: %d", len(text))
		}
		if c.Body != shown(content) {
			t.Fatalf("pointer body differs from the content as shown")
		}
	}
}

func TestTermScannerLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"crlf", "one\r\ntwo\r\n", []string{"one", "two"}},
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"colors", "\x1b[32mgreen\x1b[0m text  \r\n", []string{"green text"}},
		{"cr overwrite", "50%\r100%\r\n", []string{"50%", "100%"}},
		{"osc title", "\x1b]0;title\x07shown\n", []string{"shown"}},
		{"cursor moves split rows", "left\x1b[5;1Hright\n", []string{"left", "right"}},
		{"charset", "\x1b(Bplain\n", []string{"plain"}},
		{"done marker", "\x1b[2K\r__HM_BG_DONE__\r\n", []string{"", "__HM_BG_DONE__"}},
		{"invalid utf8", "a\xffb\n", []string{"a\uFFFDb"}},
		{"blank", "\n", []string{""}},
		{"long line in pieces", strings.Repeat("x", maxLineBytes+3) + "\r\n", []string{strings.Repeat("x", maxLineBytes), "xxx"}},
		{"csi parameters", "a\x1b[38;5;174mb\x1b[?2004hc\n", []string{"abc"}},
		{"dcs ended by ST", "a\x1bP1;2q\x07x\x1b\\b\n", []string{"ab"}},
		{"osc cancelled by CAN", "\x1b]0;t\x18shown\n", []string{"shown"}},
	}
	for _, tc := range tests {
		var got []string
		s := termScanner{emit: func(l string) { got = append(got, l) }}
		s.Write([]byte(tc.in))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
			t.Errorf("%s: lines %q, want %q", tc.name, got, tc.want)
		}
	}
}

func FuzzTermScanner(f *testing.F) {
	for _, s := range []string{"\x1b[?2004h", "a\r\nb", "\x1b]0;x\x07y\n", "\x1bP1;2q\x1b\\z\n", "\x1b[?1;2004l", "\x1b\x1b[?2004h",
		"plain text run \x1b[1;31mred\x1b[0m\tand more\r\n", "\x1b]0;a title\x1b\\x\n", "\x1bPq#0;2;0;0;0\x07still\x1b\\y\n"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		var whole, parts, bytewise []string
		a := termScanner{emit: func(l string) { whole = append(whole, l) }}
		a.Write(data)
		// step, one byte at a time, is the definition Write's runs must keep.
		ref := termScanner{emit: func(l string) { bytewise = append(bytewise, l) }}
		for _, c := range data {
			ref.step(c)
		}
		if fmt.Sprintf("%q", whole) != fmt.Sprintf("%q", bytewise) || a.state != ref.state || a.lastCR != ref.lastCR || !bytes.Equal(a.line, ref.line) {
			t.Fatalf("Write differs from step byte by byte:\n%q\n%q", whole, bytewise)
		}
		b := termScanner{emit: func(l string) { parts = append(parts, l) }}
		step := int(split)%7 + 1
		for i := 0; i < len(data); i += step {
			b.Write(data[i:min(len(data), i+step)])
		}
		if fmt.Sprintf("%q", whole) != fmt.Sprintf("%q", parts) {
			t.Fatalf("lines differ when split:\n%q\n%q", whole, parts)
		}
		for _, l := range whole {
			if strings.ContainsAny(l, "\x1b\r\n") || !utf8.ValidString(l) || len(l) > 3*maxLineBytes {
				t.Fatalf("bad line %q", l)
			}
		}
	})
}

func TestRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		size   int
		writes []string
		want   string
	}{
		{8, []string{"abc"}, "abc"},
		{8, []string{"abcdefgh"}, "abcdefgh"},
		{8, []string{"abcdefghij"}, "cdefghij"},
		{8, []string{"abcde", "fghij"}, "cdefghij"},
		{8, []string{"abc", "def", "ghi", "jkl"}, "efghijkl"},
		{3, []string{"a", "b", "c", "d"}, "bcd"},
	}
	for _, tc := range tests {
		r := newRing(tc.size)
		for _, w := range tc.writes {
			r.Write([]byte(w))
		}
		if got := string(r.Tail(-1)); got != tc.want || r.Len() != len(tc.want) {
			t.Errorf("ring(%d) %q: %q, want %q", tc.size, tc.writes, got, tc.want)
		}
	}
	r := newRing(16)
	r.Write([]byte("xx日本"))
	if got := string(r.Tail(5)); got != "本" {
		t.Errorf("Tail cut inside a rune: %q", got)
	}
}

func FuzzRing(f *testing.F) {
	f.Add([]byte("hello world"), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, size, step uint8) {
		sz := int(size)%64 + 1
		st := int(step)%9 + 1
		r := newRing(sz)
		var ref []byte
		for i := 0; i < len(data); i += st {
			chunk := data[i:min(len(data), i+st)]
			r.Write(chunk)
			ref = append(ref, chunk...)
			if len(ref) > sz {
				ref = ref[len(ref)-sz:]
			}
		}
		if got := r.Tail(-1); !bytes.Equal(got, ref) {
			t.Fatalf("ring = %q, want %q", got, ref)
		}
	})
}

func TestParseControlFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in         string
		cols, rows uint16
		ok         bool
	}{
		{`{"type":"resize","cols":80,"rows":24}`, 80, 24, true},
		{`{"type":"resize","cols":0,"rows":24}`, 0, 0, false},
		{`{"type":"resize","cols":70000,"rows":24}`, 0, 0, false},
		{`{"type":"other","cols":80,"rows":24}`, 0, 0, false},
		{`not json`, 0, 0, false},
	}
	for _, tc := range tests {
		c, r, ok := parseControlFrame([]byte(tc.in))
		if c != tc.cols || r != tc.rows || ok != tc.ok {
			t.Errorf("parseControlFrame(%s) = %d %d %v", tc.in, c, r, ok)
		}
	}
}

func FuzzParseControlFrame(f *testing.F) {
	f.Add([]byte(`{"type":"resize","cols":80,"rows":24}`))
	f.Add([]byte(`{"type":"resize"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, r, ok := parseControlFrame(b)
		if ok && (c == 0 || r == 0) {
			t.Fatalf("accepted a zero size from %q", b)
		}
	})
}

func TestPaneFromPath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"/attach/builder":  "builder",
		"/attach/bg-2-1/":  "bg-2-1",
		"/attach/":         "",
		"/builder":         "builder",
		"/x/attach/oracle": "oracle",
	}
	for in, want := range tests {
		if got := paneFromPath(in); got != want {
			t.Errorf("paneFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescribeExit(t *testing.T) {
	t.Parallel()
	run := func(script string) error { return exec.Command("/bin/sh", "-c", script).Run() }
	tests := []struct {
		name string
		err  error
		last string
		code int
		want string
	}{
		{"clean", nil, "", 0, "exited with code 0"},
		{"code", run("exit 5"), "boom", 5, "exited with code 5: boom"},
		{"not found", run("exit 127"), "", 127, "exited with code 127 (command not found)"},
		{"signal", run("kill -9 $$"), "", -1, "killed by signal killed"},
		{"other", errors.New("weird"), "", -1, "wait: weird"},
	}
	for _, tc := range tests {
		code, msg := describeExit(tc.err, tc.last)
		if code != tc.code || msg != tc.want {
			t.Errorf("%s: describeExit = %d %q, want %d %q", tc.name, code, msg, tc.code, tc.want)
		}
	}
}

func TestStageKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[StageKind]string{StageTyped: "typed", StageSubmitted: "submitted", StageUnverified: "unverified", StageFailed: "failed", StageStuck: "stuck", StageRetyping: "retyping", 0: "StageKind(0)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), want)
		}
	}
}

// TestEraseReachesTyping: an erase reaches an earlier typing when the
// program reads it (the terminal raw around its write), and when the
// kernel's line editor took both; never when the mode changed around
// either write, nor when only the erase went to the kernel (the program
// may hold the typing, read while raw).
func TestEraseReachesTyping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		erase, typed inputMode
		want         bool
	}{
		{modeRaw, modeRaw, true},
		{modeRaw, modeCanonical, true},
		{modeRaw, modeChanged, true},
		{modeCanonical, modeCanonical, true},
		{modeCanonical, modeRaw, false},
		{modeCanonical, modeChanged, false},
		{modeChanged, modeCanonical, false},
		{modeChanged, modeRaw, false},
	} {
		if got := tc.erase.erases(tc.typed); got != tc.want {
			t.Errorf("erase written %d, typing written %d: erases %v, want %v", tc.erase, tc.typed, got, tc.want)
		}
	}
}
