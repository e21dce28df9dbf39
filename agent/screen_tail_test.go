package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/agent/internal/vterm"
)

// TestScreenTail: a screen tail keeps the newest output of a run in a
// file that outlives its writer (no close, as after a kill -9): all of it
// while it fits, else the newest bytes, cut after their first line feed
// for a replay, or from the last drawing of the screen (restart) while
// all since fits; a copy the writer did not finish (begun ahead of done)
// costs the oldest bytes it may have overwritten, never a wrong byte.
func TestScreenTail(t *testing.T) {
	t.Parallel()
	type op struct {
		write, restart string
	}
	for _, tc := range []struct {
		name      string
		size      int
		seed      string
		ops       []op
		torn      int // a last copy of this many bytes begun, not done
		want      string
		wantClean bool
		replay    string
	}{
		{name: "empty", size: 16, wantClean: true},
		{name: "fits", size: 16, ops: []op{{write: "ab\x1b[1m"}, {write: "cd\n> "}}, want: "ab\x1b[1mcd\n> ", wantClean: true, replay: "ab\x1b[1mcd\n> "},
		{name: "seeded", size: 16, seed: "old\n", ops: []op{{write: "> "}}, want: "old\n> ", wantClean: true, replay: "old\n> "},
		{name: "wrapped", size: 8, ops: []op{{write: "\x1b[31mred\n"}, {write: "> x"}}, want: "mred\n> x", replay: "> x"},
		{name: "one write past the size", size: 4, ops: []op{{write: "abcdef"}}, want: "cdef"},
		{name: "wrapped, no line feed", size: 4, ops: []op{{write: "ab"}, {write: "cdef"}}, want: "cdef"},
		{name: "torn", size: 8, ops: []op{{write: "abc\ndefg"}}, torn: 3, want: "\ndefg", replay: "defg"},
		{name: "torn before it wrapped", size: 16, ops: []op{{write: "abc\n"}}, torn: 3, want: "abc\n", wantClean: true, replay: "abc\n"},
		{name: "restarted", size: 16, ops: []op{{write: "0123456789"}, {restart: "SCR"}, {write: "xy"}}, want: "SCRxy", wantClean: true, replay: "SCRxy"},
		{name: "restarted, then wrapped past it", size: 8, ops: []op{{write: "abc"}, {restart: "S"}, {write: "01\n3456789"}}, want: "\n3456789", replay: "3456789"},
		{name: "restarted over the wrap", size: 8, ops: []op{{write: "abcdef"}, {restart: "SCR"}, {write: "xy"}}, want: "SCRxy", wantClean: true, replay: "SCRxy"},
		{name: "a drawing over half the ring is not kept", size: 8, ops: []op{{write: "ab\n"}, {restart: "SCREE"}, {write: "cd"}}, want: "ab\ncd", wantClean: true, replay: "ab\ncd"},
		{name: "torn over the replay start", size: 8, ops: []op{{write: "abc"}, {restart: "S\nT"}, {write: "xyz"}}, torn: 4, want: "Txyz", replay: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "p.screen")
			st, err := createScreenTail(path, tc.size, []byte(tc.seed), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.ops {
				if o.restart != "" {
					st.restart([]byte(o.restart))
				}
				st.write([]byte(o.write))
			}
			if tc.torn > 0 { // the writer killed inside a copy
				done := st.u64(screenTailDone)
				for i := range uint64(tc.torn) {
					st.ring()[(done+i)%uint64(tc.size)] = '#'
				}
				st.setU64(screenTailBegun, done+uint64(tc.torn))
			}
			got, err := readScreenTail(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.out) != tc.want || got.clean != tc.wantClean {
				t.Errorf("tail %q clean %v, want %q clean %v", got.out, got.clean, tc.want, tc.wantClean)
			}
			if r := got.replayable(); string(r) != tc.replay {
				t.Errorf("replayable %q, want %q", r, tc.replay)
			}
		})
	}
}

// TestScreenTailNotOne: a missing file, or one that is not a screen tail,
// holds nothing to replay.
func TestScreenTailNotOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not a screen tail at all, no"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "none"), other} {
		if got, err := readScreenTail(path); err == nil || got.out != nil {
			t.Errorf("%s: %q, %v; want an error and nothing", path, got.out, err)
		}
	}
}

// TestScreenTailRebuildsScreen: a pane's output kept in a screen tail
// (keepTailLocked, as the pane's reader keeps it) and replayed into a
// blank terminal draws the screen the pane's terminal shows: also when
// the output is many times the tail, the rows drawn first long gone from
// it (a spinner's frames after them), and for a full-screen program.
func TestScreenTailRebuildsScreen(t *testing.T) {
	t.Parallel()
	spinner := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "\r\x1b[2K\x1b[33m%c working %d\x1b[0m", "⠋⠙⠹⠸"[i%4], i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		chunks []string
	}{
		{"short", []string{"banner\r\n", "\x1b[1m> \x1b[0m"}},
		{"a spinner many times the tail", []string{"static row 1\r\nstatic row 2\r\n", spinner(3000), "\r\x1b[2K● done\r\n> typed"}},
		{"full screen", []string{"shell$ tui\r\n\x1b[?1049h\x1b[H\x1b[2J\x1b[1;1Htitle\x1b[24;1H> ", spinner(3000), "\x1b[5;3Hrow five\x1b[24;3H"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := createScreenTail(filepath.Join(t.TempDir(), "p.screen"), 8<<10, nil, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			p := &Pane{vt: vterm.New(80, 24)}
			pr := &proc{tail: st}
			last := time.Unix(1_800_000_000, 0)
			for _, c := range tc.chunks {
				for b := []byte(c); len(b) > 0; { // in reads of at most 1 KiB
					n := min(len(b), 1<<10)
					last = last.Add(time.Millisecond)
					p.vtMu.Lock()
					p.keepTailLocked(pr, b[:n], last)
					p.vt.Write(b[:n])
					p.vtMu.Unlock()
					b = b[n:]
				}
			}
			tail, err := readScreenTail(st.path)
			if err != nil {
				t.Fatal(err)
			}
			if !tail.at.Equal(last) {
				t.Errorf("the tail's last output at %v, want %v", tail.at, last)
			}
			fresh := vterm.New(80, 24)
			fresh.Write(tail.replayable())
			if got, want := fresh.String(), p.vt.String(); got != want {
				t.Errorf("replayed screen (tail %d bytes, clean %v):\n%s\nwant:\n%s", len(tail.out), tail.clean, got, want)
			}
			gr, gc := fresh.Cursor()
			wr, wc := p.vt.Cursor()
			if gr != wr || gc != wc || fresh.AltScreen() != p.vt.AltScreen() {
				t.Errorf("replayed cursor %d,%d alt %v; want %d,%d alt %v", gr, gc, fresh.AltScreen(), wr, wc, p.vt.AltScreen())
			}
		})
	}
}
