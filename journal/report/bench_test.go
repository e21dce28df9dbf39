package report

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"zombiezen.com/go/sqlite"

	"hm/journal"
	"hm/journal/journaltest"
	"hm/roles"
)

var benchRows = flag.Int("bench-rows", 1_000_000, "messages in the generated benchmark ledger")

// genLedger is a generated ledger shared by the benchmarks of one test
// process; it is built on first use only, so plain `go test` never
// generates it.
type genLedger struct {
	once    sync.Once
	dir     string
	path    string
	bytes   int64  // database size on disk (db + wal)
	files   string // the sizes of the files, for the log
	latest  string // the highest session in it
	genTime time.Duration
	err     error
}

// benchLedger has sessions of a few hundred messages; bigLedger the same
// number of messages, the last *bigSessionRows of them in one session.
var benchLedger, bigLedger genLedger

// TestMain fails the run if a test left a goroutine behind.
func TestMain(m *testing.M) {
	flag.Parse()
	goleak.VerifyTestMain(m)
}

// benchLedgerVersion names the generator's output: bump it when
// journaltest.Generate or the schema changes what a cached ledger holds.
// (Schema migrations run when a cached ledger is opened.)
const benchLedgerVersion = 3

// openBenchLedger returns the shared generated ledger, opened for the
// caller (closed at cleanup), and its latest session id.
func openBenchLedger(b *testing.B) (*journal.Ledger, string) {
	return openGenLedger(b, &benchLedger, 0)
}

// openBigLedger is openBenchLedger for the ledger whose latest session
// holds *bigSessionRows of its messages.
func openBigLedger(b *testing.B) (*journal.Ledger, string) {
	return openGenLedger(b, &bigLedger, *bigSessionRows)
}

func openGenLedger(b *testing.B, bl *genLedger, lastSession int) (*journal.Ledger, string) {
	b.Helper()
	if testing.Short() {
		b.Skip("the benchmark ledger is too large for -short")
	}
	bl.once.Do(func() { bl.err = bl.generate(*benchRows, lastSession) })
	if bl.err != nil {
		b.Fatal(bl.err)
	}
	b.Logf("ledger: %d messages (last session %d), %d bytes on disk (%s), generated in %v", *benchRows, lastSession, bl.bytes, bl.files, bl.genTime.Round(time.Second))
	l, err := journal.Open(context.Background(), bl.path, journal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l, bl.latest
}

// generate makes (or reuses) a benchmark ledger of n messages, the last
// lastSession of them in one session when lastSession > 0. It is cached
// in the temp directory across test processes (make bench runs each
// benchmark in its own process): generated under a temporary name and
// renamed into place only when complete.
func (bl *genLedger) generate(n, lastSession int) error {
	name := fmt.Sprintf("hm-bench-ledger-v%d-%d", benchLedgerVersion, n)
	if lastSession > 0 {
		name += fmt.Sprintf("-last%d", lastSession)
	}
	bl.dir = filepath.Join(os.TempDir(), name)
	bl.path = filepath.Join(bl.dir, "evidence-ledger.db")
	start := time.Now()
	ctx := context.Background()
	quiet := journal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := os.Stat(bl.path); err != nil {
		tmp, err := os.MkdirTemp(os.TempDir(), "hm-bench-ledger-gen-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		l, err := journal.Open(ctx, filepath.Join(tmp, "evidence-ledger.db"), quiet)
		if err != nil {
			return err
		}
		if err := journaltest.GenerateConfig(ctx, l, journaltest.Config{N: n, Seed: 1, LastSession: lastSession}); err != nil {
			_ = l.Close()
			return err
		}
		if err := l.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp, bl.dir); err != nil && !errors.Is(err, fs.ErrExist) && !os.IsExist(err) {
			return err
		}
		bl.genTime = time.Since(start)
	}
	l, err := journal.Open(ctx, bl.path, quiet)
	if err != nil {
		return err
	}
	err = l.Read(ctx, func(conn *sqlite.Conn) error {
		ids, err := sessionIDs(conn)
		bl.latest = latestSession(ids, "", 0)
		return err
	})
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(bl.path + suffix); err == nil {
			bl.bytes += fi.Size()
			bl.files += fmt.Sprintf(" %s%s=%d", filepath.Base(bl.path), suffix, fi.Size())
		}
	}
	return nil
}

// nextSession returns the id of the session after id.
func nextSession(id string) string {
	n, _ := roles.SessionNumber(id)
	return roles.SessionID(n + 1)
}

// runTimed runs fn b.N times and reports ms/op, p50-ms, p99-ms and the
// output size.
func runTimed(b *testing.B, fn func() ([]byte, error)) {
	b.Helper()
	var lat []time.Duration
	var size int
	for b.Loop() {
		start := time.Now()
		out, err := fn()
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(b.Elapsed())/float64(b.N), "ms/op")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(float64(size), "out-bytes")
}

// BenchmarkLedgerSize1M reports the shared generated ledger's size on disk
// (database and WAL, FTS index included) per million messages. There is
// nothing to time: it measures the file sizes once per iteration.
func BenchmarkLedgerSize1M(b *testing.B) {
	_, _ = openBenchLedger(b)
	var bytes int64
	for b.Loop() {
		bytes = 0
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(benchLedger.path + suffix); err == nil {
				bytes += fi.Size()
			}
		}
	}
	b.ReportMetric(float64(bytes)*1e6/float64(*benchRows), "disk-bytes")
}

func BenchmarkHandoff1M(b *testing.B) {
	l, latest := openBenchLedger(b)
	ctx := context.Background()
	o := Options{SessionID: latest, Roles: fixtureRoles}
	runTimed(b, func() ([]byte, error) { return Handoff(ctx, l, o) })
}

func BenchmarkBriefing1M(b *testing.B) {
	l, latest := openBenchLedger(b)
	ctx := context.Background()
	o := Options{SessionID: nextSession(latest), Now: time.Now(), Roles: fixtureRoles}
	runTimed(b, func() ([]byte, error) { return Briefing(ctx, l, o) })
}

// BenchmarkHandoff1MBigSession hands off a session that holds
// *bigSessionRows of the ledger's *benchRows messages (the session being
// handed off is the ledger's latest).
func BenchmarkHandoff1MBigSession(b *testing.B) {
	l, latest := openBigLedger(b)
	ctx := context.Background()
	o := Options{SessionID: latest, Roles: fixtureRoles}
	runTimed(b, func() ([]byte, error) { return Handoff(ctx, l, o) })
}

// BenchmarkBriefing1MBigSession builds briefings on the ledger whose
// latest session holds *bigSessionRows of its *benchRows messages:
// "previous" for the session after it (the big session is the briefing's
// previous session, whose counts it shows), "current" for the big session
// itself (its obligations and signals are the current session's).
func BenchmarkBriefing1MBigSession(b *testing.B) {
	l, latest := openBigLedger(b)
	ctx := context.Background()
	b.Run("previous", func(b *testing.B) {
		o := Options{SessionID: nextSession(latest), Now: time.Now(), Roles: fixtureRoles}
		runTimed(b, func() ([]byte, error) { return Briefing(ctx, l, o) })
	})
	b.Run("current", func(b *testing.B) {
		o := Options{SessionID: latest, Now: time.Now(), Roles: fixtureRoles}
		runTimed(b, func() ([]byte, error) { return Briefing(ctx, l, o) })
	})
}

var bigSessionRows = flag.Int("bench-session-rows", 100_000, "messages in the single session of BenchmarkOneBigSession and in the latest session of the *BigSession benchmarks' ledger")

// BenchmarkOneBigSession measures the worst case for the session-scoped
// queries: a ledger whose messages all belong to one session, handed off
// (and briefed as the previous session). The *1MBigSession benchmarks
// measure the same on a 1M-message ledger.
func BenchmarkOneBigSession(b *testing.B) {
	if testing.Short() {
		b.Skip("too large for -short")
	}
	ctx := context.Background()
	l, err := journal.Open(ctx, filepath.Join(b.TempDir(), "evidence-ledger.db"), journal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	ms := journaltest.Messages(*bigSessionRows, 2)
	for _, m := range ms {
		m.SessionID = roles.SessionID(1)
	}
	for len(ms) > 0 {
		k := min(len(ms), 1000)
		if err := l.AppendBatch(ctx, ms[:k]); err != nil {
			b.Fatal(err)
		}
		ms = ms[k:]
	}
	b.Run("handoff", func(b *testing.B) {
		runTimed(b, func() ([]byte, error) { return Handoff(ctx, l, Options{Session: 1, Roles: fixtureRoles}) })
	})
	b.Run("briefing", func(b *testing.B) {
		runTimed(b, func() ([]byte, error) {
			return Briefing(ctx, l, Options{Session: 2, Now: time.Now(), Roles: fixtureRoles})
		})
	})
}

// BenchmarkSearch1M measures full-text search on the shared 1M-message
// ledger with a mix of query shapes (a common word, a rare phrase, AND/OR,
// a prefix), newest 20 hits each.
func BenchmarkSearch1M(b *testing.B) {
	l, _ := openBenchLedger(b)
	ctx := context.Background()
	if err := l.FlushFTS(ctx); err != nil {
		b.Fatal(err)
	}
	queries := []string{`checkpoint`, `"bracketed paste"`, `telegram AND relay`, `fuzz OR golden`, `bench*`, `detector`}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		start := time.Now()
		hits, err := l.Search(ctx, q, 20)
		lat = append(lat, time.Since(start))
		if err != nil || len(hits) == 0 {
			b.Fatalf("search %q: %d hits, %v", q, len(hits), err)
		}
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
}
