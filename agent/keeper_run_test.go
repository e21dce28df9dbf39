package agent

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostPane is a keeperRun whose "terminal" is a pipe: what the host
// writes into it is read back from r.
func hostPane(t testing.TB) (k *keeperRun, r *os.File, entered string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	entered = filepath.Join(t.TempDir(), "pane.entered")
	k = &keeperRun{cfg: keeperConfig{Entered: entered}, master: w}
	t.Cleanup(func() { _ = k.entered.close() })
	return k, r, entered
}

// drained is what the pipe holds now.
func drained(t testing.TB, r *os.File) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		_ = r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return string(out)
		}
	}
}

// TestHostServesHubChannel: the host's side of a pane's channel
// (keeper.go: keeperQuit, keeperEnter): each whole Enter request presses
// one CR and records its id, answered "ok"; quit ends it; a line cut by
// the hub's death, an unknown or an overlong line press nothing.
func TestHostServesHubChannel(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, c := range []struct {
		name     string
		in       string
		quit     bool
		cr       int
		entered  []string
		answered string
	}{
		{"enter then the hub is gone", "e id-1\n", false, 1, []string{"id-1"}, "ok\n"},
		{"two enters", "e id-1\ne id-2\n", false, 2, []string{"id-1", "id-2"}, "ok\nok\n"},
		{"quit", "q\n", true, 0, nil, ""},
		{"enter then quit", "e id-1\nq\ne id-2\n", true, 1, []string{"id-1"}, "ok\n"},
		{"a line cut by the hub's death", "e id-1\ne id-", false, 1, []string{"id-1"}, "ok\n"},
		{"unknown and overlong lines", "zzz\n" + long + "\ne " + long + "\ne id-3\n", false, 1, []string{"id-3"}, "ok\n"},
		{"a bare quit byte is no request", "q", false, 0, nil, ""},
		{"no id", "e \ne a b\n", false, 0, nil, "failed no message id to record\nfailed no message id to record\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, r, entered := hostPane(t)
			var answers bytes.Buffer
			if got := k.serveHub(bufio.NewReader(strings.NewReader(c.in)), &answers); got != c.quit {
				t.Errorf("serveHub = %v, want %v", got, c.quit)
			}
			if got := drained(t, r); got != strings.Repeat("\r", c.cr) {
				t.Errorf("the terminal got %q, want %d CR", got, c.cr)
			}
			ids, err := ReadEntered(entered)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.entered) {
				t.Errorf("entered log %q, want %q", ids, c.entered)
			}
			if answers.String() != c.answered {
				t.Errorf("answers %q, want %q", answers.String(), c.answered)
			}
		})
	}
}

// TestHostEnterBusy: a terminal that takes no input makes the host
// answer "busy" and record nothing (the hub asks again).
func TestHostEnterBusy(t *testing.T) {
	k, r, entered := hostPane(t)
	// Fill the pipe: the host's write cannot complete.
	fill := make([]byte, 4096)
	_ = k.master.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		if _, err := k.master.Write(fill); err != nil {
			break
		}
	}
	if got := k.enter("id-1"); got != enterBusy {
		t.Errorf("enter into a full terminal answered %q, want %q", got, enterBusy)
	}
	if ids, _ := ReadEntered(entered); len(ids) != 0 {
		t.Errorf("a busy Enter was recorded: %q", ids)
	}
	drained(t, r)
	if got := k.enter("id-2"); got != enterDone {
		t.Errorf("enter once the terminal reads answered %q, want %q", got, enterDone)
	}
}

// FuzzHostChannel: whatever the hub's channel carries, the host presses
// exactly one CR per id it records, and never panics.
func FuzzHostChannel(f *testing.F) {
	for _, s := range []string{"e id-1\n", "q\n", "e a b\ne\n\n", "e id\x00\n", "\xff\xfe\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k, r, entered := hostPane(t)
		k.serveHub(bufio.NewReader(strings.NewReader(in)), &bytes.Buffer{})
		crs := strings.Count(drained(t, r), "\r")
		data, err := os.ReadFile(entered)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if lines := bytes.Count(data, []byte("\n")); crs != lines {
			t.Errorf("%d CR pressed, %d records: each Enter recorded once", crs, lines)
		}
	})
}
