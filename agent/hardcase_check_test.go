package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hardMsg is one message of a hard-case batch.
type hardMsg struct {
	id, content string
	n           int // 1-based number, in the "(ARCH #n): " header
}

// msgIndex maps each message's id to its index in msgs.
func msgIndex(msgs []hardMsg) map[string]int {
	index := make(map[string]int, len(msgs))
	for i, m := range msgs {
		index[m.id] = i
	}
	return index
}

// header starts the message's content (unique per message).
func (m hardMsg) header() string { return fmt.Sprintf("(ARCH #%d): ", m.n) }

// hardWords are the words of generated text.
var hardWords = strings.Fields("the pane types each message into the agent and waits for its prompt " +
	"before pressing enter build test deploy review queue ledger hub broker journal retry")

// hardMessages returns n mixed messages, the same every run: short,
// multi-line, control bytes, emoji and CJK, shell syntax, long lines, and
// one of 20 KiB (message 58).
func hardMessages(n int) []hardMsg {
	rng := rand.New(rand.NewPCG(15, 100))
	words := func(lo, hi int) string {
		k := lo + rng.IntN(hi-lo+1)
		w := make([]string, k)
		for i := range w {
			w[i] = hardWords[rng.IntN(len(hardWords))]
		}
		return strings.Join(w, " ")
	}
	upTo := func(size int) string {
		var b strings.Builder
		for b.Len() < size {
			b.WriteString(words(5, 12))
			b.WriteString(". ")
		}
		return b.String()[:size]
	}
	out := make([]hardMsg, n)
	for i := range out {
		m := hardMsg{id: fmt.Sprintf("hm-hc-%03d", i), n: i + 1}
		var body string
		switch {
		case i == 57:
			var b strings.Builder
			for b.Len() < 20*1024 {
				b.WriteString(upTo(70) + "\n")
			}
			body = "twenty KiB:\n" + b.String()[:20*1024-12]
		case i%6 == 0:
			body = "short: " + words(2, 8)
		case i%6 == 1:
			body = fmt.Sprintf("multi-line %d\n%s\n\n\t%s\n%s", i, words(3, 9), words(2, 6), words(1, 10))
		case i%6 == 2:
			body = fmt.Sprintf("controls %d: esc \x1b[31mred\x1b[0m bell\x07 etx\x03 del\x7f nul\x00 c1\u009b paste-end \x1b[201~ tab\tend %s", i, words(1, 4))
			if i%4 == 0 {
				body += " cr\rafter the cr"
			}
		case i%6 == 3:
			body = "unicode: 日本語のテキスト 中文 한국어 🚀 👨‍👩‍👧 ✓ ½ héllo " + words(1, 6)
		case i%6 == 4:
			body = "shell: $(rm -rf ~) `id` ${HOME} $((1+2)) && echo 'q' \"dq\" \\ | cat; " + words(1, 6)
		default:
			body = "long line: " + upTo(300+rng.IntN(3500))
		}
		m.content = m.header() + body
		out[i] = m
	}
	return out
}

// want is what the program should log for m: the typed line (the
// neutralised body inline, or for a pointer message the one-line pointer,
// checked by shape) and whether the body went to a pointer file.
func (m hardMsg) want(multi bool) (inline string, pointer bool) {
	body := strings.Trim(Neutralize(m.content), " \t\n")
	if len(body) > MaxInlineBody || strings.Contains(body, "\n") && !multi {
		return "", true
	}
	if !multi {
		body = flatten(body)
	}
	return AgentPrefix + body + " " + Trailer(m.id), false
}

// trailerRE finds the message id in a logged prompt's trailer.
var trailerRE = regexp.MustCompile(`\[hm:([^\]\s]+)\]\n*$`)

// limited reports at most a few errors per kind, then how many more.
type limited struct {
	t     testing.TB
	count map[string]int
}

const errorsPerKind = 3

func (l *limited) errorf(kind, format string, args ...any) {
	l.t.Helper()
	l.count[kind]++
	if l.count[kind] <= errorsPerKind {
		l.t.Errorf(kind+": "+format, args...)
	}
}

func (l *limited) summary() {
	l.t.Helper()
	for kind, n := range l.count {
		if n > errorsPerKind {
			l.t.Errorf("%s: %d more like this", kind, n-errorsPerKind)
		}
	}
}

// checkHardDelivery compares what the program logged with the messages and
// with the stages the pane reported: each message submitted exactly once,
// intact, in order; each submitted message reported submitted, and no
// message reported submitted that the program did not take (before the
// report).
func checkHardDelivery(t testing.TB, spec Spec, msgs []hardMsg, recs []promptRec, stages *stageLog) {
	t.Helper()
	l := &limited{t: t, count: map[string]int{}}
	defer l.summary()
	index := msgIndex(msgs)
	var discarded []string
	taken := make([][]promptRec, len(msgs))
	last, empty := -1, 0
	for _, r := range recs {
		if r.Discarded != "" {
			discarded = append(discarded, r.Discarded)
			continue
		}
		if strings.TrimSpace(r.Prompt) == "" {
			empty++ // an extra Enter on an empty input: harmless in real CLIs
			continue
		}
		mt := trailerRE.FindStringSubmatch(r.Prompt)
		i, ok := 0, mt != nil
		if ok {
			i, ok = index[mt[1]]
		}
		if !ok {
			l.errorf("not a message", "the program took %d bytes that end in no message's trailer: %.100q", len(r.Prompt), r.Prompt)
			continue
		}
		if i <= last && len(taken[i]) == 0 {
			l.errorf("order", "message %d submitted after message %d", i, last)
		}
		last = max(last, i)
		taken[i] = append(taken[i], r)
	}
	if empty > 0 || len(discarded) > 0 {
		t.Logf("the program took %d empty prompts and threw input away %d times", empty, len(discarded))
	}
	lost := func(m hardMsg) string {
		for _, d := range discarded {
			if strings.Contains(d, m.header()) || strings.Contains(d, Trailer(m.id)) {
				return " (the program threw its text away)"
			}
		}
		return ""
	}
	multi := spec.Timing.MultiLine
	for i, m := range msgs {
		st := stages.get(m.id)
		var submitted []Stage
		for _, s := range st {
			switch s.Kind {
			case StageSubmitted:
				submitted = append(submitted, s)
			case StageFailed:
				l.errorf("failed", "message %d: stage failed: %v", i, s.Err)
			}
		}
		switch n := len(taken[i]); {
		case n == 0:
			l.errorf("never submitted", "message %d (%d bytes) never reached the program as a prompt%s; stages %s", i, len(m.content), lost(m), stageKinds(st))
			if len(submitted) > 0 {
				l.errorf("false submitted", "message %d reported submitted, but the program never took it%s", i, lost(m))
			}
			continue
		case n > 1:
			l.errorf("repeated", "message %d submitted %d times", i, n)
		}
		rec := taken[i][0]
		checkIntact(l, spec, m, i, multi, strings.TrimRight(rec.Prompt, "\n"))
		switch {
		case len(submitted) == 0:
			l.errorf("stage", "message %d was taken by the program but its stages are %s, want submitted", i, stageKinds(st))
		case len(submitted) > 1:
			l.errorf("stage", "message %d reported submitted %d times", i, len(submitted))
		case submitted[0].At.UnixMilli() < rec.At:
			l.errorf("false submitted", "message %d reported submitted %d ms before the program took it%s", i, rec.At-submitted[0].At.UnixMilli(), lost(m))
		}
	}
}

// checkIntact compares a logged prompt (trailing newlines trimmed: an Enter
// taken as a newline and repaired by a second Enter leaves one) with the
// message, and a pointer message's file with its body.
func checkIntact(l *limited, spec Spec, m hardMsg, i int, multi bool, got string) {
	l.t.Helper()
	want, pointer := m.want(multi)
	if !pointer {
		if got != want {
			l.errorf("not intact", "message %d:\n got %.300q\nwant %.300q", i, got, want)
		}
		return
	}
	path := filepath.Join(spec.PointerDir, m.id+".txt")
	if n := len(anyTrailerRE.FindAllString(got, -1)); n != 1 {
		l.errorf("not intact", "message %d: %d trailers on its pointer line %.300q", i, n, got)
		return
	}
	if !strings.HasPrefix(got, AgentPrefix+m.header()) || !strings.HasSuffix(got, " in "+path+"] "+Trailer(m.id)) || strings.Contains(got, "\n") {
		l.errorf("not intact", "message %d: pointer line %.300q", i, got)
		return
	}
	body, err := os.ReadFile(path)
	if err != nil || string(body) != Neutralize(m.content) {
		l.errorf("not intact", "message %d: pointer file %s holds %d bytes (%v), want %d", i, path, len(body), err, len(Neutralize(m.content)))
	}
}
