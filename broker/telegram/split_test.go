package telegram

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"only whitespace", " \n\t\n ", 10, nil},
		{"fits", "hello", 10, []string{"hello"}},
		{"fits exactly", "0123456789", 10, []string{"0123456789"}},
		{"outer whitespace trimmed", "\n\n  hi  \n", 10, []string{"hi"}},
		{"paragraph preferred over line", "aaa\nbbb\n\nccc ddd", 12, []string{"aaa\nbbb", "ccc ddd"}},
		{"line when no paragraph fits", "aaaa\nbbbb cccc", 11, []string{"aaaa", "bbbb cccc"}},
		{"space when no line fits", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"hard cut inside a word", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"several paragraphs", "p1\n\np2\n\np3", 6, []string{"p1\n\np2", "p3"}},
		{"blank lines collapse at the cut", "aaa\n\n\n\nbbb", 5, []string{"aaa", "bbb"}},
		{"astral runes count two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"never splits a rune", "é😀é", 2, []string{"é", "😀", "é"}},
		{"cjk hard cut", "日本語のテキスト", 3, []string{"日本語", "のテキ", "スト"}},
		{"limit below two is two", "abc", 0, []string{"ab", "c"}},
		{"indentation kept inside a part", "x\n  y", 10, []string{"x\n  y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.limit)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Split(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
			}
			checkSplit(t, tt.text, max(tt.limit, 2), got)
		})
	}
}

// checkSplit verifies Split's contract: parts non-empty, within limit, free of
// outer whitespace, and equal to the text in order with only whitespace
// between them.
func checkSplit(t *testing.T, text string, limit int, parts []string) {
	t.Helper()
	pos := 0
	for i, p := range parts {
		if p == "" {
			t.Fatalf("part %d is empty", i)
		}
		if n := UTF16Len(p); n > limit {
			t.Fatalf("part %d is %d UTF-16 units, limit %d", i, n, limit)
		}
		if strings.TrimFunc(p, unicode.IsSpace) != p {
			t.Fatalf("part %d has outer whitespace: %q", i, p)
		}
		skip := len(text[pos:]) - len(strings.TrimLeftFunc(text[pos:], unicode.IsSpace))
		pos += skip
		if !strings.HasPrefix(text[pos:], p) {
			t.Fatalf("part %d %q is not the text at byte %d (%q...)", i, p, pos, text[pos:min(len(text), pos+20)])
		}
		pos += len(p)
	}
	if rest := text[pos:]; strings.TrimFunc(rest, unicode.IsSpace) != "" {
		t.Fatalf("text after the last part was dropped: %q", rest)
	}
	if utf8.ValidString(text) {
		for i, p := range parts {
			if !utf8.ValidString(p) {
				t.Fatalf("part %d is not valid UTF-8", i)
			}
		}
	}
}

func FuzzSplit(f *testing.F) {
	seeds := []struct {
		text  string
		limit int
	}{
		{"", 10},
		{"hello world", 5},
		{"para one\n\npara two\n\npara three", 12},
		{"line\nline\nline", 6},
		{"😀😀😀 ab", 3},
		{"\xff\xfe broken \xc3", 4},
		{strings.Repeat("word ", 60), 16},
		{"a\u00a0b\u3000c\u2028d", 2},
		{"\n\n\n", 1},
	}
	for _, s := range seeds {
		f.Add(s.text, s.limit)
	}
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = 2 + abs(limit)%300
		checkSplit(t, text, limit, Split(text, limit))
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // minimum int
			return 0
		}
		return -n
	}
	return n
}

func TestUTF16Len(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"é", 1},
		{"😀", 2},
		{"a😀b", 4},
		{"\xff", 1},
	}
	for _, tt := range tests {
		if got := UTF16Len(tt.in); got != tt.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	text := strings.Repeat(para+"\n\n", 200) // ~180 KB
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if len(Split(text, MaxPartLen)) == 0 {
			b.Fatal("no parts")
		}
	}
}
