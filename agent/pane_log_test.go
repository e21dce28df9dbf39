package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/poll"
)

// TestPaneLogFlushes checks each way a batch of the pane log reaches the
// file: after the delay, when a batch is full, when the program exits
// (before OnExit runs) and when the pane stops. Where another way is
// tested, the delay is an hour, so that only that way can write.
func TestPaneLogFlushes(t *testing.T) {
	t.Parallel()
	const marker = "pane-log-marker"
	tests := []struct {
		name    string
		command string
		delay   time.Duration
		// check waits for the pane's output to reach the log (the pane
		// still runs) or ends the pane and returns; logged then reads
		// the log.
		check func(t *testing.T, p *Pane, logged func() string, exited <-chan string)
	}{
		{"after the delay", "printf '%s\\n' " + marker + "; exec sleep 600", 10 * time.Millisecond,
			func(t *testing.T, p *Pane, logged func() string, _ <-chan string) {
				poll.For(t, time.Minute, func() error {
					return poll.Want(strings.Contains(logged(), marker), "the marker in the log, have %q", logged())
				})
			}},
		{"a full batch at once", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; exec sleep 600", logBatch), time.Hour,
			func(t *testing.T, p *Pane, logged func() string, _ <-chan string) {
				poll.For(t, time.Minute, func() error {
					return poll.Want(len(logged()) >= logBatch, "a batch of %d bytes in the log, have %d", logBatch, len(logged()))
				})
			}},
		{"when the program exits, before OnExit", "printf '%s\\n' " + marker, time.Hour,
			func(t *testing.T, p *Pane, _ func() string, exited <-chan string) {
				select {
				case got := <-exited:
					if !strings.Contains(got, marker) {
						t.Errorf("the log when OnExit ran: %q, want the marker", got)
					}
				case <-time.After(poll.Floor):
					t.Fatal("OnExit not called")
				}
			}},
		{"when the pane stops", "printf '%s\\n' " + marker + "; exec sleep 600", time.Hour,
			func(t *testing.T, p *Pane, logged func() string, _ <-chan string) {
				poll.For(t, time.Minute, func() error {
					return poll.Want(strings.Contains(p.Screen().Text(), marker), "the marker on the screen")
				})
				ctx, cancel := contextWithTimeout(time.Minute)
				defer cancel()
				if err := p.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(logged(), marker) {
					t.Errorf("the log after Stop: %q, want the marker", logged())
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "pane.log")
			logged := func() string {
				b, _ := os.ReadFile(path)
				return string(b)
			}
			exited := make(chan string, 1)
			p := startPane(t, Spec{Command: tc.command, LogPath: path, logDelay: tc.delay,
				OnExit: func(int, error) {
					select {
					case exited <- logged():
					default:
					}
				}})
			tc.check(t, p, logged, exited)
		})
	}
}

// TestPaneLogBatches checks the log's content against what was appended,
// across batches, rotations and pieces larger than the rotation size:
// every file at most max bytes, the bytes in order, nothing lost in the
// current file and its one rotation.
func TestPaneLogBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int64
		chunks []int
	}{
		{"no rotation", -1, []int{1, 100, logBatch - 1, 5, logBatch * 2}},
		{"rotation between batches", 3 * logBatch, []int{logBatch, logBatch, logBatch, 10}},
		{"a batch larger than the rotation size", 1000, []int{logBatch + 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "pane.log")
			l := openPaneLog(path, tc.max, time.Hour, testLogger(t))
			var all []byte
			now := time.Now()
			for i, n := range tc.chunks {
				b := bytes.Repeat([]byte{byte('a' + i%26)}, n)
				all = append(all, b...)
				l.append(b, now)
			}
			l.close()
			cur, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			old, _ := os.ReadFile(path + ".1")
			if tc.max > 0 && (int64(len(cur)) > tc.max || int64(len(old)) > tc.max) {
				t.Errorf("files of %d and %d bytes, bound %d", len(cur), len(old), tc.max)
			}
			if got := append(old, cur...); !bytes.HasSuffix(all, got) || tc.max < 0 && len(got) != len(all) {
				t.Errorf("the log holds %d bytes that are not the last of the %d appended", len(got), len(all))
			}
			if len(cur) == 0 {
				t.Errorf("the current file is empty")
			}
		})
	}
}

// TestPaneLogStreamingOutputWrites checks that output finding the batch
// delay old writes it, without the timer: while output streams the batch
// is written by the reader.
func TestPaneLogStreamingOutputWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pane.log")
	l := openPaneLog(path, -1, time.Hour, testLogger(t))
	defer l.close()
	t0 := time.Now()
	for _, step := range []struct {
		at   time.Duration
		text string
		want string
	}{
		{0, "one ", ""},
		{59 * time.Minute, "two ", ""},
		{60 * time.Minute, "three ", "one two three "},
		{61 * time.Minute, "four ", "one two three "},
	} {
		l.append([]byte(step.text), t0.Add(step.at))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != step.want {
			t.Errorf("after %q at +%v the log holds %q, want %q", step.text, step.at, got, step.want)
		}
	}
}
