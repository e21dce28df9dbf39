package initwire

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// applyDiff applies a unified diff made by unifiedDiff to a.
func applyDiff(a, diff string) (string, error) {
	old := splitLines(a)
	var out []string
	pos := 0
	lines := splitLines(diff)
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "@@ -") {
			return "", fmt.Errorf("line %d: %q is not a hunk header", i, l)
		}
		r := strings.Fields(l)[1][1:]
		start, _, _ := strings.Cut(r, ",")
		n, _ := strconv.Atoi(start)
		if !strings.Contains(r, ",") || !strings.HasSuffix(r, ",0") {
			n-- // 1-based, except for an empty range
		}
		out = append(out, old[pos:n]...)
		pos = n
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "@@ ") {
			i++
			l := lines[i]
			text := l[1:]
			if i+1 < len(lines) && lines[i+1] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(old) || old[pos] != text {
					return "", fmt.Errorf("line %d: %q does not match %q", i, l, old[min(pos, len(old)-1)])
				}
				if l[0] == ' ' {
					out = append(out, text)
				}
				pos++
			case '+':
				out = append(out, text)
			}
		}
	}
	return strings.Join(append(out, old[pos:]...), ""), nil
}

func TestUnifiedDiff(t *testing.T) {
	if d := unifiedDiff("a", "b", []byte("same\n"), []byte("same\n")); d != "" {
		t.Errorf("equal files: %q", d)
	}
	got := unifiedDiff("a/x", "b/x", []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), []byte("1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n"))
	want := "--- a/x\n+++ b/x\n@@ -3,7 +3,7 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("/dev/null", "b/x", nil, []byte("a\nb")); got != "--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n" {
		t.Errorf("new file:\n%s", got)
	}
	// Round trips: far-apart changes make separate hunks, near ones one.
	var long []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("line %d\n", i))
	}
	base := strings.Join(long, "")
	for _, tc := range []struct{ a, b string }{
		{"", "x\n"},
		{"x\n", ""},
		{"a\nb\nc", "a\nB\nc"},
		{"a\nb\nc\n", "a\nb\nc"},
		{base, strings.Replace(strings.Replace(base, "line 2\n", "two\n", 1), "line 30\n", "", 1) + "end\n"},
		{base, strings.Replace(base, "line 5\n", "five\nfive and a half\n", 1)},
		{base, "new top\n" + strings.Replace(base, "line 39\n", "", 1)},
	} {
		d := unifiedDiff("a", "b", []byte(tc.a), []byte(tc.b))
		got, err := applyDiff(tc.a, d)
		if err != nil || got != tc.b {
			t.Errorf("diff does not apply (%v):\n%s\ngot %q\nwant %q", err, d, got, tc.b)
		}
	}
}
