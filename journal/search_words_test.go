package journal

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestSearchPunctuatedWords: words with punctuation FTS5 has no syntax for
// (hyphens, '#', apostrophes, paths, dotted names) are searched as the
// phrase of their tokens instead of failing as malformed: `hm comms search
// hm-send` found nothing but "no such column: send". Queries that really
// are malformed FTS5 still fail with ErrBadQuery.
func TestSearchPunctuatedWords(t *testing.T) {
	t.Parallel()
	l := openTest(t, Options{FTSInterval: time.Hour})
	ctx := ctxT(t)
	for _, m := range []*Message{
		msg("p0", "builder", "architect", 1, "use hm-send to reply"),
		msg("p1", "oracle", "architect", 1, "ACK ARCH #12 done"),
		msg("p2", "oracle", "builder", 2, "don't panic"),
		msg("p3", "architect", "builder", 1, "see /tmp/x.txt and v1.2.3 at ops@example.com"),
	} {
		if _, err := l.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.FlushFTS(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q    string
		want []string
	}{
		{"hm-send", []string{"p0"}},
		{"ARCH #12", []string{"p1"}},
		{"#12", []string{"p1"}},
		{"don't", []string{"p2"}},
		{"/tmp/x.txt", []string{"p3"}},
		{"v1.2.3", []string{"p3"}},
		{"ops@example.com", []string{"p3"}},
		{"hm-send OR panic", []string{"p2", "p0"}},
		{"NEAR(hm-send reply, 3)", []string{"p0"}},
		{`"hm-send to" reply`, []string{"p0"}},
		{"hm*", []string{"p0"}},
	}
	for _, tt := range tests {
		hits, err := l.Search(ctx, tt.q, 10)
		if err != nil {
			t.Errorf("Search(%q): %v", tt.q, err)
			continue
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.MessageID)
		}
		if !reflect.DeepEqual(ids, tt.want) {
			t.Errorf("Search(%q) = %v, want %v", tt.q, ids, tt.want)
		}
	}
	for _, bad := range []string{`"unterminated`, "AND", "(", "panic OR", "nocolumn:word", "*", "NEAR(a b"} {
		if _, err := l.Search(ctx, bad, 5); !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%q) = %v, want ErrBadQuery", bad, err)
		}
	}
}
