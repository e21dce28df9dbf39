package notify_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"hm/internal/ground/poll"
	"hm/internal/notify"
	"hm/internal/notify/notifytest"
	"hm/journal"
)

// TestForMessage: which routed messages deserve telling the person.
func TestForMessage(t *testing.T) {
	t.Parallel()
	msg := func(from, to, body string) journal.Message {
		return journal.Message{MessageID: "m1", SenderRole: from, TargetRole: to, Header: "ARCH", Seq: 3, RawBody: "(ARCH #3): " + body}
	}
	cases := []struct {
		name      string
		m         journal.Message
		wantKind  notify.Kind // "" for none
		wantTitle string
		wantBody  string
	}{
		{"to user", msg("architect", "user", "tests pass"), notify.KindMessage, "hm: ARCH #3 (architect) wrote to you", "tests pass"},
		{"asks for an answer", msg("architect", "user", "[ACK REQUIRED] deploy?"), notify.KindAckRequired, "hm: ARCH #3 (architect) asks for your answer", "[ACK REQUIRED] deploy?"},
		{"no escape sequence reaches a terminal", msg("architect", "user", "red \x1b[31mtext\x07\nnext line"), notify.KindMessage, "hm: ARCH #3 (architect) wrote to you", "red [31mtext next line"},
		{"to another agent", msg("architect", "builder", "hello"), "", "", ""},
		{"the hub's own notice to user", msg("system", "user", "Your message is stuck"), "", "", ""},
		{"the person's own", msg("user", "user", "note to self"), "", "", ""},
	}
	for _, tc := range cases {
		ev, ok := notify.ForMessage(tc.m)
		if ok != (tc.wantKind != "") || ev.Kind != tc.wantKind || ev.Title != tc.wantTitle || ev.Body != tc.wantBody {
			t.Errorf("%s: ForMessage = %+v, %v; want kind %q title %q body %q", tc.name, ev, ok, tc.wantKind, tc.wantTitle, tc.wantBody)
		}
		if ok && ev.Key != "message:m1" {
			t.Errorf("%s: key %q", tc.name, ev.Key)
		}
	}
	if long, _ := notify.ForMessage(msg("architect", "user", strings.Repeat("x", 500))); len([]rune(long.Body)) != 200 {
		t.Errorf("a long body is shown whole: %d characters", len([]rune(long.Body)))
	}
}

// TestForReminded: an overdue answer is told when the person is owed it.
func TestForReminded(t *testing.T) {
	t.Parallel()
	opened := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		requester string
		want      bool
	}{{"user", true}, {"architect", false}} {
		o := journal.Obligation{MessageID: "ask", OwnerRole: "builder", RequesterRole: tc.requester, Ref: "USER #2", OpenedAtMs: opened.UnixMilli()}
		ev, ok := notify.ForReminded(o, opened.Add(10*time.Minute))
		if ok != tc.want || (ok && (ev.Key != "owed:ask" || !strings.Contains(ev.Body, "builder has not answered your USER #2 for 10m0s"))) {
			t.Errorf("requester %s: ForReminded = %+v, %v; want told %v", tc.requester, ev, ok, tc.want)
		}
	}
}

// TestWaitingSpells: a pane waiting for a person is told once per spell;
// flapping within Settle is one spell, a new program is a new one, and a
// restart (Save, Load) continues the spell of the same program.
func TestWaitingSpells(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	type look struct {
		at      time.Duration
		pid     int
		waiting bool
		restart bool // the hub restarts before this look
	}
	cases := []struct {
		name  string
		looks []look
		want  []time.Duration // when events come
	}{
		{"short wait: none", []look{{0, 7, true, false}, {5 * time.Second, 7, false, false}, {time.Minute, 7, false, false}}, nil},
		{"long wait: once", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {20 * time.Second, 7, true, false}}, []time.Duration{10 * time.Second}},
		{"flapping is one spell", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {15 * time.Second, 7, false, false},
			{20 * time.Second, 7, true, false}, {40 * time.Second, 7, true, false}}, []time.Duration{10 * time.Second}},
		{"settled, then a new spell", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {15 * time.Second, 7, false, false},
			{50 * time.Second, 7, false, false}, {60 * time.Second, 7, true, false}, {70 * time.Second, 7, true, false}}, []time.Duration{10 * time.Second, 70 * time.Second}},
		{"a new program is a new spell", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {11 * time.Second, 8, true, false},
			{21 * time.Second, 8, true, false}}, []time.Duration{10 * time.Second, 21 * time.Second}},
		{"a restart continues the spell", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {2 * time.Minute, 7, true, true},
			{3 * time.Minute, 7, true, false}}, []time.Duration{10 * time.Second}},
		{"a restart with a new program", []look{{0, 7, true, false}, {10 * time.Second, 7, true, false}, {2 * time.Minute, 9, true, true},
			{2*time.Minute + 10*time.Second, 9, true, false}}, []time.Duration{10 * time.Second, 2*time.Minute + 10*time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &notify.Waiting{After: 10 * time.Second, Settle: 30 * time.Second}
			var got []time.Duration
			for _, l := range tc.looks {
				if l.restart {
					next := &notify.Waiting{After: w.After, Settle: w.Settle}
					if err := next.Load(w.Save()); err != nil {
						t.Fatal(err)
					}
					w = next
				}
				for _, ev := range w.Observe(t0.Add(l.at), []notify.PaneState{{Role: "builder", Header: "BUILDER", PID: l.pid, Waiting: l.waiting, Screen: "blocked: Allow?", Queued: 2}}) {
					got = append(got, l.at)
					if ev.Kind != notify.KindWaiting || !strings.HasPrefix(ev.Line, "hm: builder (BUILDER) has waited for you for ") ||
						!strings.Contains(ev.Body, "blocked: Allow?. 2 message(s) held. hm attach builder") {
						t.Errorf("event %+v", ev)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events at %v, want %v", got, tc.want)
			}
		})
	}
}

// recorder is a sink that keeps what it is told.
type recorder struct {
	mu  sync.Mutex
	got []notify.Event
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Notify(_ context.Context, ev notify.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ev)
	return nil
}
func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.got {
		out = append(out, ev.Key)
	}
	return out
}

// run runs n until the test ends.
func run(t *testing.T, n *notify.Notifier) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// TestOnceAcrossRestarts: an event is told once, also when posted again
// by the next hub on the same ledger.
func TestOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := journal.Open(ctx, filepath.Join(t.TempDir(), "evidence-ledger.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := func(key string) notify.Event {
		return notify.Event{Key: key, Kind: notify.KindMessage, Title: "hm: t", Body: "b", Line: "hm: t: b"}
	}
	first := &recorder{}
	n := notify.New(notify.Config{Store: l, Sinks: []notify.Sink{first}})
	stop := run(t, n)
	n.Post(ev("message:a"))
	n.Post(ev("message:a"))
	n.Post(ev("message:b"))
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(slices.Equal(first.keys(), []string{"message:a", "message:b"}), "told %v", first.keys())
	})
	stop()

	second := &recorder{}
	n2 := notify.New(notify.Config{Store: l, Sinks: []notify.Sink{second}})
	run(t, n2)
	n2.Post(ev("message:a"))
	n2.Post(ev("message:c"))
	poll.For(t, 10*time.Second, func() error {
		return poll.Want(slices.Equal(second.keys(), []string{"message:c"}), "the next hub told %v, want only message:c", second.keys())
	})
	if r := n2.Recent(); len(r) != 1 || r[0].Key != "message:c" || r[0].Seq != 1 {
		t.Fatalf("Recent = %+v", r)
	}
}

// TestDesktopCommand: the configured command gets the title and body as
// two arguments, never parsed by the shell.
func TestDesktopCommand(t *testing.T) {
	t.Parallel()
	command, calls := notifytest.Command(t, t.TempDir())
	d := notify.DesktopCommand(command)
	ev := notify.Event{Title: `hm: "ARCH #1" wrote to you`, Body: "$(touch pwned) `id` it's done; rm -rf /"}
	if err := d.Notify(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got := calls(); len(got) != 1 || got[0] != ev.Title+"\t"+ev.Body {
		t.Fatalf("the command got %q", got)
	}
	if err := notify.DesktopCommand("exit 3").Notify(context.Background(), ev); err == nil {
		t.Fatal("a failing command is not an error")
	}
}

// TestDetectDesktop: notify-send where it is found, osascript on macOS,
// with the text quoted for AppleScript; none without either.
func TestDetectDesktop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"notify-send", "osascript"} {
		// A stand-in for the system's program, which this machine may
		// not have: it records its arguments, one per line.
		script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" + filepath.Join(dir, name+".log") + "'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	look := func(have ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			if slices.Contains(have, name) {
				return filepath.Join(dir, name), nil
			}
			return "", errors.New("not found")
		}
	}
	ev := notify.Event{Title: `hm: say "hi"`, Body: `a\b`}
	cases := []struct {
		goos string
		have []string
		want string // the stand-in's log, "" for no notifier
	}{
		{"linux", []string{"notify-send", "osascript"}, "--app-name=hm\nhm: say \"hi\"\na\\b\n"},
		{"darwin", []string{"notify-send", "osascript"}, "-e\ndisplay notification \"a\\\\b\" with title \"hm: say \\\"hi\\\"\"\n"},
		{"linux", nil, ""},
		{"darwin", []string{"notify-send"}, ""},
	}
	for _, tc := range cases {
		d, ok := notify.DetectDesktop(tc.goos, look(tc.have...))
		if ok != (tc.want != "") {
			t.Fatalf("%s with %v: found %v", tc.goos, tc.have, ok)
		}
		if !ok {
			continue
		}
		if err := d.Notify(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		name := "notify-send"
		if tc.goos == "darwin" {
			name = "osascript"
		}
		log := filepath.Join(dir, name+".log")
		data, err := os.ReadFile(log)
		if err != nil || string(data) != tc.want {
			t.Errorf("%s: %s got %q (%v), want %q", tc.goos, name, data, err, tc.want)
		}
		os.Remove(log)
	}
}

// TestTerminal: the hub's terminal gets a bell and an OSC 9 notification
// when it is a terminal (a real PTY here), and a file gets nothing.
func TestTerminal(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	sink, ok := notify.TerminalOf(tty)
	if !ok {
		t.Fatal("a pty is not taken for a terminal")
	}
	ev := notify.Event{Title: "hm: ARCH #1 (architect) wrote to you", Body: "tests pass", Line: "hm: ARCH #1 (architect) wrote to you: tests pass"}
	if err := sink.Notify(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	want := "\a\x1b]9;hm: ARCH #1 (architect) wrote to you: tests pass\a" + "hm: ARCH #1 (architect) wrote to you: tests pass"
	var got []byte
	buf := make([]byte, 512)
	poll.For(t, 10*time.Second, func() error {
		_ = ptmx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := ptmx.Read(buf)
		got = append(got, buf[:n]...)
		return poll.Want(strings.Contains(string(got), want), "the terminal got %q, want %q", got, want)
	})

	f, err := os.Create(filepath.Join(t.TempDir(), "hub.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := notify.TerminalOf(f); ok {
		t.Fatal("a file is taken for a terminal")
	}
}
