package initwire

import (
	"fmt"
	"strings"
)

// unifiedDiff is a unified diff (3 lines of context) from a to b, labelled
// with the two names; "" when they are equal. Lines are compared whole; a
// last line without a newline is marked as diff(1) does.
func unifiedDiff(nameA, nameB string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is within 2*context of the next.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(end+context+1, len(ops))
		var ax, ay, nx, ny int
		ax, ay = ops[start].x, ops[start].y
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				nx++
			}
			if o.kind != '-' {
				ny++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ax, nx), hunkRange(ay, ny))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			if !strings.HasSuffix(o.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline.
func splitLines(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// diffOp is one line of a diff: kind ' ', '-' or '+', and where it stands in
// the old (x) and new (y) line lists.
type diffOp struct {
	kind byte
	text string
	x, y int
}

// diffLines is a shortest line diff of x and y: the common prefix and suffix
// are set aside, and the middle goes through a longest-common-subsequence
// table (the files hm init edits are small and its changes local; a middle
// too big for the table is shown as removed and added whole).
func diffLines(x, y []string) []diffOp {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', x[i], i, i})
	}
	if (len(mx)+1)*(len(my)+1) > 4_000_000 {
		for i, l := range mx {
			ops = append(ops, diffOp{'-', l, pre + i, pre})
		}
		for j, l := range my {
			ops = append(ops, diffOp{'+', l, pre + len(mx), pre + j})
		}
	} else {
		// lcs[i][j]: length of the LCS of mx[i:] and my[j:].
		lcs := make([][]int32, len(mx)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(my)+1)
		}
		for i := len(mx) - 1; i >= 0; i-- {
			for j := len(my) - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(mx) || j < len(my) {
			switch {
			case i < len(mx) && j < len(my) && mx[i] == my[j]:
				ops = append(ops, diffOp{' ', mx[i], pre + i, pre + j})
				i, j = i+1, j+1
			case i < len(mx) && (j == len(my) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', mx[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', my[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', x[len(x)-suf+k], len(x) - suf + k, len(y) - suf + k})
	}
	return ops
}
