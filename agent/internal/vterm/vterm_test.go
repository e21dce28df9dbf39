package vterm

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScreen(t *testing.T) {
	tests := []struct {
		name      string
		cols      int
		rows      int
		in        string
		want      []string // leading rows; the rest must be blank
		row, col  int
		alt, bp   bool
		appCursor bool
		title     string
	}{
		{name: "text and newline", cols: 10, rows: 3, in: "hello\r\nworld", want: []string{"hello", "world"}, row: 1, col: 5},
		{name: "autowrap", cols: 4, rows: 3, in: "abcdefg", want: []string{"abcd", "efg"}, row: 1, col: 3},
		{name: "pending wrap at margin", cols: 4, rows: 3, in: "abcd\r\nx", want: []string{"abcd", "x"}, row: 1, col: 1},
		{name: "scroll", cols: 5, rows: 2, in: "1\r\n2\r\n3\r\n4", want: []string{"3", "4"}, row: 1, col: 1},
		{name: "cursor position and erase line", cols: 10, rows: 3, in: "aaaaaaaaaa\x1b[1;4H\x1b[K", want: []string{"aaa"}, row: 0, col: 3},
		{name: "erase display", cols: 5, rows: 3, in: "a\r\nb\r\nc\x1b[2J", want: nil, row: 2, col: 1},
		{name: "carriage return overwrite", cols: 10, rows: 2, in: "working 1\rworking 22", want: []string{"working 22"}, row: 0, col: 10 - 1},
		{name: "cursor up redraw (Ink)", cols: 20, rows: 4, in: "line1\r\nline2\r\n\x1b[2K\x1b[1A\x1b[2K\x1b[Gnew", want: []string{"line1", "new"}, row: 1, col: 3},
		{name: "wide runes", cols: 6, rows: 2, in: "漢字x", want: []string{"漢字x"}, row: 0, col: 5},
		{name: "wide rune wraps whole", cols: 5, rows: 2, in: "abcd漢", want: []string{"abcd", "漢"}, row: 1, col: 2},
		{name: "overwrite half of wide rune", cols: 6, rows: 1, in: "漢字\x1b[1;2Hx", want: []string{" x字"}, row: 0, col: 2},
		{name: "scroll region", cols: 5, rows: 4, in: "top\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\x1b[r\x1b[4;1Hbot", want: []string{"top", "b", "c", "bot"}, row: 3, col: 3},
		{name: "insert and delete lines", cols: 5, rows: 3, in: "a\r\nb\r\nc\x1b[2;1H\x1b[L", want: []string{"a", "", "b"}, row: 1, col: 0},
		{name: "delete chars", cols: 8, rows: 1, in: "abcdef\x1b[1;2H\x1b[2P", want: []string{"adef"}, row: 0, col: 1},
		{name: "insert chars", cols: 8, rows: 1, in: "abcdef\x1b[1;2H\x1b[2@", want: []string{"a  bcdef"}, row: 0, col: 1},
		{name: "erase chars", cols: 8, rows: 1, in: "abcdef\x1b[1;2H\x1b[2X", want: []string{"a  def"}, row: 0, col: 1},
		{name: "alternate screen", cols: 10, rows: 3, in: "main\x1b[?1049h\x1b[Hfull", want: []string{"full"}, row: 0, col: 4, alt: true},
		{name: "leave alternate screen restores", cols: 10, rows: 3, in: "main\x1b[?1049h\x1b[Hfull\x1b[?1049l", want: []string{"main"}, row: 0, col: 4},
		{name: "bracketed paste on", cols: 10, rows: 2, in: "\x1b[?2004h> ", want: []string{">"}, row: 0, col: 2, bp: true},
		{name: "bracketed paste in a mode list", cols: 10, rows: 2, in: "\x1b[?1;2004h", bp: true, appCursor: true},
		{name: "bracketed paste off", cols: 10, rows: 2, in: "\x1b[?2004h\x1b[?2004l"},
		{name: "full reset", cols: 10, rows: 2, in: "junk\x1b[?2004h\x1b[?1049h\x1bc", want: nil},
		{name: "title", cols: 10, rows: 2, in: "\x1b]0;my title\x07x", want: []string{"x"}, col: 1, title: "my title"},
		{name: "title ST", cols: 10, rows: 2, in: "\x1b]2;other\x1b\\", title: "other"},
		{name: "save restore cursor", cols: 10, rows: 3, in: "ab\x1b7\x1b[3;5Hx\x1b8y", want: []string{"aby", "", "    x"}, row: 0, col: 3},
		{name: "tabs", cols: 20, rows: 1, in: "a\tb", want: []string{"a       b"}, col: 9},
		{name: "backspace", cols: 10, rows: 1, in: "ab\bc", want: []string{"ac"}, col: 2},
		{name: "reverse index scrolls down", cols: 5, rows: 2, in: "a\r\nb\x1b[H\x1bM", want: []string{"", "a"}},
		{name: "huge cursor move is clamped", cols: 5, rows: 2, in: "\x1b[99999999;99999999Hx", want: []string{"", "    x"}, row: 1, col: 4},
		{name: "truncated escape then text", cols: 10, rows: 1, in: "\x1b[12", want: nil},
		{name: "invalid utf8 byte ignored", cols: 10, rows: 1, in: "a\xffb", want: []string{"ab"}, col: 2},
		{name: "combining mark dropped", cols: 10, rows: 1, in: "e\u0301x", want: []string{"ex"}, col: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := New(tt.cols, tt.rows)
			term.Write([]byte(tt.in))
			lines := term.Lines()
			for i, l := range lines {
				want := ""
				if i < len(tt.want) {
					want = tt.want[i]
				}
				if l != want {
					t.Errorf("row %d = %q, want %q\nscreen:\n%s", i, l, want, term.String())
				}
			}
			if r, c := term.Cursor(); r != tt.row || c != tt.col {
				t.Errorf("cursor = %d,%d, want %d,%d", r, c, tt.row, tt.col)
			}
			if term.AltScreen() != tt.alt || term.BracketedPaste() != tt.bp || term.AppCursor() != tt.appCursor {
				t.Errorf("alt/paste/appCursor = %v/%v/%v, want %v/%v/%v", term.AltScreen(), term.BracketedPaste(), term.AppCursor(), tt.alt, tt.bp, tt.appCursor)
			}
			if term.Title() != tt.title {
				t.Errorf("title = %q, want %q", term.Title(), tt.title)
			}
		})
	}
}

func TestSplitWrites(t *testing.T) {
	in := "\x1b[?2004h\x1b]0;t\x07\x1b[2;3Hx漢\x1b[?1049h\x1b[?1049lz"
	whole := New(10, 3)
	whole.Write([]byte(in))
	for cut := range len(in) {
		split := New(10, 3)
		split.Write([]byte(in[:cut]))
		split.Write([]byte(in[cut:]))
		if split.String() != whole.String() || split.BracketedPaste() != whole.BracketedPaste() || split.Title() != whole.Title() {
			t.Fatalf("split at %d: %q, want %q", cut, split.String(), whole.String())
		}
	}
}

func TestReplies(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"cursor position", "ab\r\nc\x1b[6n", "\x1b[2;2R"},
		{"extended cursor position", "\x1b[3;4H\x1b[?6n", "\x1b[?3;4;1R"},
		{"status", "\x1b[5n", "\x1b[0n"},
		{"primary DA", "\x1b[c", "\x1b[?62;22c"},
		{"primary DA 0", "\x1b[0c", "\x1b[?62;22c"},
		{"secondary DA", "\x1b[>c", "\x1b[>1;10;0c"},
		{"xtversion", "\x1b[>q", "\x1bP>|" + Version + "\x1b\\"},
		{"kitty keyboard query", "\x1b[?u", "\x1b[?0u"},
		{"kitty keyboard after push", "\x1b[>1u\x1b[?u", "\x1b[?1u"},
		{"kitty keyboard after pop", "\x1b[>1u\x1b[<u\x1b[?u", "\x1b[?0u"},
		{"foreground colour, BEL-terminated, answered so", "\x1b]10;?\x07", "\x1b]10;rgb:d0d0/d0d0/d0d0\x07"},
		{"background colour", "\x1b]11;?\x1b\\", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		{"mode report paste", "\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"},
		{"window size", "\x1b[18t", "\x1b[8;24;80t"},
		{"ANSI mode report insert", "\x1b[4h\x1b[4$p", "\x1b[4;1$y"},
		{"ANSI mode report unknown", "\x1b[3$p", "\x1b[3;0$y"},
		{"settings scroll region", "\x1b[2;10r\x1bP$qr\x1b\\", "\x1bP1$r2;10r\x1b\\"},
		{"settings unknown", "\x1bP$q\"q\x1b\\", "\x1bP0$r\x1b\\"},
		{"capability unknown", "\x1bP+q544e;636f6c6f7273\x1b\\", "\x1bP0+r544e\x1b\\"},
		{"no query no reply", "hello \x1b[31mred\x1b[0m", ""},
		{"several in order", "\x1b[c\x1b[6n", "\x1b[?62;22c\x1b[1;1R"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := New(80, 24)
			term.Write([]byte(tt.in))
			if got := string(term.Replies()); got != tt.want {
				t.Errorf("replies = %q, want %q", got, tt.want)
			}
			if got := term.Replies(); len(got) != 0 {
				t.Errorf("replies not cleared: %q", got)
			}
		})
	}
}

func TestRepliesBounded(t *testing.T) {
	term := New(80, 24)
	term.Write(bytes.Repeat([]byte("\x1b[6n"), 100000))
	if n := len(term.Replies()); n > maxReplies {
		t.Fatalf("%d reply bytes kept, limit %d", n, maxReplies)
	}
}

func TestResize(t *testing.T) {
	term := New(10, 5)
	term.Write([]byte("a\r\nb\r\nc\r\nd\r\ne"))
	term.Resize(4, 2)
	if got := term.String(); got != "d\ne" {
		t.Errorf("after shrink: %q", got)
	}
	if r, c := term.Cursor(); r != 1 || c != 1 {
		t.Errorf("cursor %d,%d", r, c)
	}
	term.Resize(20, 6)
	term.Write([]byte("\x1b[6;20Hz"))
	if got := term.Line(5); got != strings.Repeat(" ", 19)+"z" {
		t.Errorf("after grow: %q", got)
	}
}

func TestRender(t *testing.T) {
	pane := New(120, 40)
	var in strings.Builder
	for i := range 40 {
		in.WriteString("\x1b[" + itoa(i+1) + ";1H" + "row " + itoa(i) + " " + strings.Repeat("x", 100) + "|end")
	}
	in.WriteString("\x1b[38;1H> typed\x1b[?2004h\x1b[?1h")
	pane.Write([]byte(in.String()))
	for _, size := range [][2]int{{80, 24}, {200, 60}, {120, 40}} {
		cols, rows := size[0], size[1]
		viewer := New(cols, rows)
		viewer.Write(pane.Render(cols, rows))
		pr, pc := pane.Cursor()
		start := 0
		if rows < 40 {
			start = 39 - rows + 1
		}
		for y := range min(rows, 40) {
			want := pane.Line(start + y)
			if r := []rune(want); len(r) > cols {
				want = strings.TrimRight(string(r[:cols]), " ")
			}
			if got := viewer.Line(y); got != want {
				t.Errorf("%dx%d row %d = %q, want %q", cols, rows, y, got, want)
			}
		}
		if vr, vc := viewer.Cursor(); vr != pr-start || vc != pc {
			t.Errorf("%dx%d cursor %d,%d want %d,%d", cols, rows, vr, vc, pr-start, pc)
		}
		if !viewer.BracketedPaste() || !viewer.AppCursor() {
			t.Errorf("%dx%d modes not carried over", cols, rows)
		}
	}
	alt := New(20, 5)
	alt.Write([]byte("\x1b[?1049h\x1b[5;1H> box"))
	viewer := New(20, 5)
	viewer.Write(alt.Render(20, 5))
	if !viewer.AltScreen() || viewer.Line(4) != "> box" {
		t.Errorf("alt render: alt=%v %q", viewer.AltScreen(), viewer.String())
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+i/10)) + string(rune('0'+i%10)))
}

// TestBadInput feeds what a broken or hostile program may print: the
// terminal must neither panic nor stall nor grow without bound.
func TestBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 10<<20)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	hugeTitle := "\x1b]0;" + strings.Repeat("T", 5<<20) + "\x07after"
	tests := []struct {
		name string
		in   []byte
		want string // the last row, when checked
	}{
		{"10 MB of garbage", garbage, ""},
		{"huge title", []byte(hugeTitle), "after"},
		{"unterminated OSC then text", []byte("\x1b]0;never ends" + strings.Repeat("x", 1<<20)), ""},
		{"truncated CSI", []byte("\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33;34;35;36;37;38;39;40H\x1b["), ""},
		{"reset mid stream", []byte("\x1b[?1049h\x1b[?2004hpartial\x1bc\x1b[?2004hok"), "ok"},
		{"DCS garbage", []byte("\x1bP" + strings.Repeat("q#0;2;0;0;0", 100000) + "\x1b\\done"), "done"},
		{"C1 controls", []byte("\x9b6n\x9d0;t\x9c\xc2\x9b6ndone"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := New(120, 40)
			for i := 0; i < len(tt.in); i += 4096 {
				term.Write(tt.in[i:min(i+4096, len(tt.in))])
				term.Replies()
			}
			if len(term.Title()) > MaxTitle {
				t.Errorf("title kept %d bytes", len(term.Title()))
			}
			if tt.want != "" {
				r, _ := term.Cursor()
				if got := term.Line(r); !strings.HasSuffix(got, tt.want) {
					t.Errorf("cursor row %q, want it to end in %q", got, tt.want)
				}
			}
			_ = term.Render(80, 24)
		})
	}
}

func FuzzScreen(f *testing.F) {
	for _, s := range []string{
		"hello\r\nworld", "\x1b[?2004h\x1b[6n", "\x1b]0;title\x07", "\x1b[2;3r\x1b[5S\x1b[3L\x1b[4M",
		"漢字\x1b[1;2H\x1b[3@\x1b[2P", "\x1b[?1049h\x1b[10;10Hx\x1b[?1049l", "\x1bP>|x\x1b\\", "\x1b[>1u\x1b[?u\x1b[<9u",
		"\x1b[?6h\x1b[5;5H\x1b[?6l", "a\x1b[999b", "\x1b#8\x1bc",
	} {
		f.Add([]byte(s), uint8(20), uint8(5))
	}
	f.Fuzz(func(t *testing.T, in []byte, cols, rows uint8) {
		term := New(int(cols), int(rows))
		half := len(in) / 2
		term.Write(in[:half])
		term.Resize(int(rows)+1, int(cols)+1)
		term.Write(in[half:])
		c, r := term.Size()
		cy, cx := term.Cursor()
		if cy < 0 || cy >= r || cx < 0 || cx >= c {
			t.Fatalf("cursor %d,%d outside %dx%d", cy, cx, c, r)
		}
		for y, l := range term.lines() {
			if len(l) != c {
				t.Fatalf("row %d has %d cells, want %d", y, len(l), c)
			}
		}
		term.Replies()
		_ = term.Render(int(rows), int(cols))
		_ = term.String()
	})
}

// TestBracketedPaste covers what termscan.go used to track for the pane.
func TestBracketedPaste(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   bool
	}{
		{"none", []string{"hello"}, false},
		{"on", []string{"\x1b[?2004h"}, true},
		{"on then off", []string{"\x1b[?2004h", "x\x1b[?2004l"}, false},
		{"split marker", []string{"ab\x1b[?20", "04h"}, true},
		{"split after esc", []string{"\x1b", "[?2004h"}, true},
		{"byte by byte", strings.Split("\x1b[?2004h", ""), true},
		{"combined modes", []string{"\x1b[?1049;2004h"}, true},
		{"combined off", []string{"\x1b[?2004h\x1b[?25;2004l"}, false},
		{"not private", []string{"\x1b[2004h"}, false},
		{"other mode", []string{"\x1b[?20045h"}, false},
		// ESC cancels an unfinished OSC string and starts a sequence, as in
		// xterm (the DEC parser): the mode switch counts.
		{"escape inside osc", []string{"\x1b]0;\x1b[?2004h\x07"}, true},
		{"after osc", []string{"\x1b]0;title\x07\x1b[?2004h"}, true},
		{"reset", []string{"\x1b[?2004h\x1bc"}, false},
		{"soft reset", []string{"\x1b[?2004h\x1b[!p"}, false},
		{"colors around", []string{"\x1b[1;31mX\x1b[0m\x1b[?2004h\x1b[K"}, true},
	}
	for _, tc := range tests {
		term := New(80, 24)
		for _, c := range tc.chunks {
			term.Write([]byte(c))
		}
		if term.BracketedPaste() != tc.want {
			t.Errorf("%s: BracketedPaste = %v, want %v", tc.name, term.BracketedPaste(), tc.want)
		}
	}
}
