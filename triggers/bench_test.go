package triggers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// percentile returns the p-th percentile (0..1) of sorted durations in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// stamped is a sink that reports the time of each call by message id.
type stamped struct {
	mu   sync.Mutex
	at   map[string]time.Time
	dups int
	ch   chan string
}

func newStamped(n int) *stamped {
	return &stamped{at: make(map[string]time.Time, n), ch: make(chan string, n)}
}

func (s *stamped) sink(ctx context.Context, f File) error {
	now := time.Now()
	s.mu.Lock()
	if _, ok := s.at[f.MessageID]; ok {
		s.dups++
	} else {
		s.at[f.MessageID] = now
	}
	s.mu.Unlock()
	select {
	case s.ch <- f.MessageID:
	default:
	}
	return nil
}

// prepare writes the temp dotfile for a trigger and returns its path and
// the final path.
func prepare(b *testing.B, dir, id string) (tmp, final string) {
	name := "builder." + id + ".txt"
	tmp = filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte("[HM-MESSAGE-ID:"+id+"]\n(ARCH #1): benchmark message"), 0o600); err != nil {
		b.Fatal(err)
	}
	return tmp, filepath.Join(dir, name)
}

// BenchmarkRenameToSink measures the latency from the rename of a complete
// file into the directory to the sink call, one file at a time (goal: p99
// under 50 ms).
func BenchmarkRenameToSink(b *testing.B) {
	const files = 1000
	dir := b.TempDir()
	st := newStamped(files)
	w := NewWatcher(dir, st.sink, Options{Logger: quietLogger(b)})
	r := startWatcher(b, w)
	waitStarted(b, w)
	var lat []time.Duration
	round := 0
	for b.Loop() {
		round++
		for i := range files {
			id := fmt.Sprintf("r%d-%04d", round, i)
			tmp, final := prepare(b, dir, id)
			start := time.Now()
			if err := os.Rename(tmp, final); err != nil {
				b.Fatal(err)
			}
			select {
			case got := <-st.ch:
				if got != id {
					b.Fatalf("got %s, want %s", got, id)
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("file %s not delivered", id)
			}
			st.mu.Lock()
			lat = append(lat, st.at[id].Sub(start))
			st.mu.Unlock()
		}
	}
	b.StopTimer()
	r.stop()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(percentile(lat, 1), "max-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkBurst writes 1,000 files from 4 writers as fast as possible and
// reports lost files (goal 0), duplicates, throughput and rename-to-sink
// latency under load.
func BenchmarkBurst(b *testing.B) {
	const writers, per = 4, 250
	const total = writers * per
	var lost, dups, delivered int
	var lat []time.Duration
	var elapsed time.Duration
	round := 0
	for b.Loop() {
		round++
		b.StopTimer()
		dir := b.TempDir()
		st := newStamped(total)
		w := NewWatcher(dir, st.sink, Options{Logger: quietLogger(b)})
		r := startWatcher(b, w)
		waitStarted(b, w)
		// temp files first, so the burst is renames only
		tmps := make([][2]string, total)
		for i := range tmps {
			tmps[i][0], tmps[i][1] = prepare(b, dir, fmt.Sprintf("b%d-%04d", round, i))
		}
		renamed := make([]time.Time, total)
		b.StartTimer()
		begin := time.Now()
		var wg sync.WaitGroup
		for wi := range writers {
			wg.Go(func() {
				for j := range per {
					i := wi*per + j
					renamed[i] = time.Now()
					if err := os.Rename(tmps[i][0], tmps[i][1]); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st.mu.Lock()
			n := len(st.at)
			st.mu.Unlock()
			if n >= total || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		elapsed += time.Since(begin)
		b.StopTimer()
		r.stop()
		st.mu.Lock()
		delivered += len(st.at)
		lost += total - len(st.at)
		dups += st.dups
		for i := range total {
			if at, ok := st.at[fmt.Sprintf("b%d-%04d", round, i)]; ok {
				lat = append(lat, at.Sub(renamed[i]))
			}
		}
		st.mu.Unlock()
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(dups), "dups")
	b.ReportMetric(float64(delivered)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
