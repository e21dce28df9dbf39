package journal_test

import (
	"context"
	"testing"
	"time"

	"hm/journal"
	"hm/journal/journaltest"
)

// BenchmarkMailbox100k times the reads behind hm_inbox and hm_status on a
// session of 100,000 messages (a ledger of 110,000): a role's unread count,
// and the first page of its unread inbox. Reports p50/p99 µs.
func BenchmarkMailbox100k(b *testing.B) {
	l := openBench(b, journal.Options{FTSInterval: time.Hour})
	ctx := context.Background()
	if err := journaltest.GenerateConfig(ctx, l, journaltest.Config{N: 110_000, Seed: 5, LastSession: 100_000}); err != nil {
		b.Fatal(err)
	}
	last, err := l.History(ctx, journal.HistoryQuery{Last: 1})
	if err != nil || len(last) != 1 {
		b.Fatal(last, err)
	}
	session := last[0].SessionID
	r := journal.Reader{Role: "builder", Groups: []string{"all", "others-architect", "others-oracle"}}
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"unread-count", func() error { _, err := l.UnreadCount(ctx, session, r); return err }},
		{"inbox-page", func() error {
			_, _, err := l.Mailbox(ctx, journal.MailboxQuery{SessionID: session, Reader: r, UnreadOnly: true, Limit: 20})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}
