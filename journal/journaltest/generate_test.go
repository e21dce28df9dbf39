package journaltest

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/status"

	"hm/journal"
)

func TestMessagesDeterministic(t *testing.T) {
	a, b := Messages(500, 7), Messages(500, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different messages")
	}
	c := Messages(500, 8)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same messages")
	}
	ids := map[string]bool{}
	var lastTs int64
	seqs := map[string]int64{}
	for i, m := range a {
		if ids[m.MessageID] {
			t.Fatalf("duplicate message id %s", m.MessageID)
		}
		ids[m.MessageID] = true
		if m.BrokeredAtMs <= lastTs {
			t.Fatalf("message %d: time went backwards", i)
		}
		lastTs = m.BrokeredAtMs
		key := m.SessionID + "/" + m.SenderRole
		if m.Seq != seqs[key]+1 {
			t.Fatalf("message %d: seq %d after %d for %s", i, m.Seq, seqs[key], key)
		}
		seqs[key] = m.Seq
		if !strings.HasPrefix(m.RawBody, "("+m.Header+" #") {
			t.Fatalf("message %d body lacks header: %q", i, m.RawBody)
		}
	}
}

func TestGenerate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := journal.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), journal.Options{
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 3000
	if err := Generate(ctx, l, n, 42); err != nil {
		t.Fatal(err)
	}
	h, err := l.History(ctx, journal.HistoryQuery{})
	if err != nil || len(h) != n {
		t.Fatalf("History: %d rows, %v", len(h), err)
	}
	statuses := map[status.Status]int{}
	channels := map[string]int{}
	sessions := map[string]bool{}
	for _, m := range h {
		statuses[m.Status]++
		channels[m.Channel]++
		sessions[m.SessionID] = true
	}
	for _, s := range []status.Status{status.Brokered, status.Failed, status.Routed, status.Acked} {
		if statuses[s] == 0 {
			t.Errorf("no %s messages: %v", s, statuses)
		}
	}
	for _, c := range []string{"ws", "trigger", "telegram"} {
		if channels[c] == 0 {
			t.Errorf("no %s messages: %v", c, channels)
		}
	}
	if len(sessions) < 3 {
		t.Errorf("only %d sessions", len(sessions))
	}
	obls, err := l.Obligations(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	open, closed := 0, 0
	for _, o := range obls {
		if o.ClosedBy == "" {
			open++
		} else {
			closed++
		}
	}
	if open == 0 || closed == 0 {
		t.Errorf("obligations: %d open, %d closed", open, closed)
	}
	sigs, err := l.Signals(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	resolved := 0
	for _, s := range sigs {
		kinds[s.Kind]++
		if s.ResolvedBy != "" {
			resolved++
		}
	}
	if len(kinds) != 4 || resolved == 0 {
		t.Errorf("signals: kinds %v, %d resolved", kinds, resolved)
	}
	if err := l.FlushFTS(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := l.Search(ctx, "ledger", 5); err != nil || len(hits) != 5 {
		t.Errorf("Search: %d hits, %v", len(hits), err)
	}
	r, err := l.Verify(ctx)
	if err != nil || !r.OK || r.Messages != n {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	t.Logf("statuses %v channels %v sessions %d obligations %d/%d signals %v", statuses, channels, len(sessions), open, closed, kinds)
}

func TestMessagesConfigLastSession(t *testing.T) {
	tests := []struct {
		name        string
		n, last     int
		wantLastLen int
	}{
		{"none", 2000, 0, -1},
		{"tail", 3000, 1200, 1200},
		{"all", 500, 500, 500},
		{"more than n", 300, 1000, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := MessagesConfig(Config{N: tt.n, Seed: 5, LastSession: tt.last})
			if len(ms) != tt.n {
				t.Fatalf("%d messages, want %d", len(ms), tt.n)
			}
			if tt.last == 0 {
				if !reflect.DeepEqual(ms, Messages(tt.n, 5)) {
					t.Fatal("LastSession 0 differs from Messages")
				}
				return
			}
			lastID := ms[len(ms)-1].SessionID
			k := 0
			for k < len(ms) && ms[len(ms)-1-k].SessionID == lastID {
				k++
			}
			if k != tt.wantLastLen {
				t.Fatalf("last session %s holds %d messages, want %d", lastID, k, tt.wantLastLen)
			}
			seqs := map[string]int64{}
			for _, m := range ms[len(ms)-k:] {
				seqs[m.SenderRole]++
				if m.Seq != seqs[m.SenderRole] {
					t.Fatalf("seq %d for %s, want %d", m.Seq, m.SenderRole, seqs[m.SenderRole])
				}
			}
		})
	}
}
