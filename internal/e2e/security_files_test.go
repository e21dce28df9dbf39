package e2e

// The security suite, continued: what the hub writes and what hostile input
// can reach — file modes, nothing written outside .squidrun/ by hostile
// targets or trigger files, and foreign Telegram chats kept from the panes.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/broker/telegram/telegramtest"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/journal"
	"hm/triggers"
)

// TestSecurityFileModes checks the modes of everything the hub writes under
// .squidrun/, with the hub started under umask 000 so that the modes it asks
// for are what count: directories 0700, every file 0600.
func TestSecurityFileModes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, burstTeam(root))
	old := syscall.Umask(0)
	h := startHub(t, root)
	syscall.Umask(old)
	lay := layout.Layout{Root: root}

	// A long body goes to coord/full-agent-messages/; a handoff now and one
	// at shutdown give session.md and last-session.md.
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, root+"/architect.jsonl")) > 0, "architect session line, have %v", len(readPrompts(t, root+"/architect.jsonl")))
	})
	op := dialAs(t, h, "user", false)
	if ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "architect", MessageID: "long-1",
		Content: strings.Repeat("a long single-line body ", 250)}); err != nil || !ack.OK {
		t.Fatalf("send: %+v %v", ack, err)
	}
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(trailerCounts(readPrompts(t, root+"/architect.jsonl"))["long-1"] > 0, "long message typed")
	})
	old = syscall.Umask(0)
	r := run(t, root, nil, "hm", "handoff")
	syscall.Umask(old)
	if r.code != 0 {
		t.Fatalf("hm handoff: %+v", r)
	}
	// Something new for the shutdown handoff, which then keeps the one above
	// as last-session.md.
	if ack, _, err := op.Send(tctx(t, 30*time.Second), proto.Frame{Type: proto.TypeSend, Target: "oracle", Content: "after the handoff"}); err != nil || !ack.OK {
		t.Fatalf("send: %+v %v", ack, err)
	}

	check := func(when string, required []string) {
		t.Helper()
		for _, p := range required {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: expected %s: %v", when, p, err)
			}
		}
		err := filepath.WalkDir(lay.State(), func(path string, d fs.DirEntry, err error) error {
			// A running hub's atomic writes make temporary files that may
			// be renamed away between the directory's read and their look.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := os.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case fi.IsDir() && fi.Mode().Perm() != 0o700:
				t.Errorf("%s: directory %s has mode %o, want 700", when, rel, fi.Mode().Perm())
			case fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600:
				t.Errorf("%s: file %s has mode %o, want 600", when, rel, fi.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	full, _ := filepath.Glob(filepath.Join(lay.FullMessages(), "*.txt"))
	if len(full) == 0 {
		t.Error("no long-body file in coord/full-agent-messages/")
	}
	check("hub running", []string{lay.Token(), lay.Ledger(), lay.Ledger() + "-wal", lay.Ledger() + "-shm", lay.HubJSON(), lay.HubLog(),
		lay.AppStatus(), lay.Session(), lay.Briefing(), filepath.Join(lay.PaneLogs(), "architect.log")})
	h.stop()
	// A fallback trigger file written by hm-send while the hub is down.
	old = syscall.Umask(0)
	r = run(t, root, []string{fmt.Sprintf("HM_PORT=%d", h.port)}, "hm-send", "builder", "while down")
	syscall.Umask(old)
	if r.code != 0 {
		t.Fatalf("hm-send fallback: %+v", r)
	}
	check("hub stopped", []string{lay.Token(), lay.Ledger(), lay.Session(), lay.LastSession(), lay.Briefing(), lay.HubLog()})
}

// snapshotTree records every path under dir (but not under skip) with its
// size and modification time.
func snapshotTree(t *testing.T, dir, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == skip {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees describes paths added, removed or changed between snapshots.
func diffTrees(before, after map[string]string) []string {
	var d []string
	for p, v := range after {
		if w, ok := before[p]; !ok {
			d = append(d, "created "+p)
		} else if w != v {
			d = append(d, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			d = append(d, "removed "+p)
		}
	}
	slices.Sort(d)
	return d
}

// TestSecurityNoWriteOutsideSquidrun sends to hostile targets and message ids
// through hm-send with the hub up and down (the fallback writes trigger
// files), and drops hostile trigger files and symlinks into triggers/:
// nothing outside .squidrun/ may be created, changed or removed.
func TestSecurityNoWriteOutsideSquidrun(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "a", "b", "proj") // "../../x" still lands inside base
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	lay := layout.Layout{Root: root}
	outside := filepath.Join(base, "outside.txt")
	if err := os.WriteFile(outside, []byte("must not change\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	absolute := []string{"/x", "/x.txt", "/etc/passwd", "/tmp/x", "/etc/x"}
	absBefore := map[string]string{}
	for _, p := range absolute {
		if fi, err := os.Lstat(p); err == nil {
			absBefore[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	hostile := []string{"../../x", "../x", "/etc/passwd", "a/b", "..", ".", "all/../../x", "builder/../../x", "../../../../../../x",
		`..\..\x`, "%2e%2e%2fx", "x/", "/x", "~/x", "builder\x7f", "builder\nx", "..builder", "builder..", strings.Repeat("b", 300)}

	h := startHub(t, root, "--no-panes")
	before := snapshotTree(t, base, lay.State())
	port := h.port
	for _, tg := range hostile {
		r := run(t, root, nil, "hm-send", tg, "hostile target")
		if r.code == 0 {
			t.Errorf("hub up: hm-send to %q accepted: %+v", tg, r)
		}
	}
	for _, id := range []string{"../../x", "a/b", "..", "/etc/passwd", `..\x`} {
		r := run(t, root, nil, "hm-send", "builder", "hostile id", "--message-id", id)
		if r.code == 0 {
			t.Errorf("hub up: hm-send with message id %q accepted: %+v", id, r)
		}
	}
	// Trigger files with hostile names (as far as a file name can carry
	// them), and symlinks pointing outside.
	hostileFiles := []string{`..\..\x.txt`, "%2e%2e%2fx.txt", "...txt", "..txt", "all..txt", "builder..txt", " .txt",
		strings.Repeat("c", 250) + ".txt", "nobody." + strings.Repeat("d", 244) + ".txt", "others-..txt", "others-%2e%2e.txt", "builder.\x01.txt"}
	for _, name := range hostileFiles {
		if err := os.WriteFile(filepath.Join(lay.Triggers(), name), []byte("hostile trigger name\n"), 0o600); err != nil {
			t.Fatalf("write %q: %v", name, err)
		}
	}
	for _, name := range []string{"nobody.txt", "builder.link.txt"} {
		if err := os.Symlink(outside, filepath.Join(lay.Triggers(), name)); err != nil {
			t.Fatal(err)
		}
	}
	// Regular files whose names parse as triggers are claimed and delivered
	// or rejected; the others (dotfiles, invalid targets, symlinks) are left
	// alone in triggers/.
	poll.For(t, 30*time.Second, func() error {
		for _, name := range hostileFiles {
			if _, ok := triggers.ParseName(name); !ok {
				continue
			}
			if _, err := os.Lstat(filepath.Join(lay.Triggers(), name)); err == nil {
				return fmt.Errorf("hostile trigger file %q still in triggers/", name)
			}
		}
		return nil
	})
	if ents, err := os.ReadDir(lay.Triggers()); err == nil {
		var left []string
		for _, e := range ents {
			if !e.IsDir() {
				left = append(left, strconv.Quote(e.Name()))
			}
		}
		t.Logf("left in triggers/ (not trigger names): %s", strings.Join(left, " "))
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "must not change\n" {
		t.Errorf("%s changed through a trigger symlink: %q %v", outside, data, err)
	}
	h.stop()

	// Hub down: hm-send falls back to trigger files.
	down := []string{fmt.Sprintf("HM_PORT=%d", port)}
	for _, tg := range hostile {
		r := run(t, root, down, "hm-send", tg, "hostile target while down")
		if r.code == 0 {
			path := strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "wrote ")+len("wrote "):])
			if filepath.Dir(path) != lay.Triggers() {
				t.Errorf("hub down: hm-send to %q wrote %s", tg, path)
			}
		}
	}
	for _, id := range []string{"../../x", "a/b", "..", "/etc/passwd"} {
		r := run(t, root, down, "hm-send", "builder", "hostile id while down", "--message-id", id)
		if r.code == 0 {
			t.Errorf("hub down: hm-send with message id %q fell back: %+v", id, r)
		}
	}
	for _, role := range []string{"../../x", "a/b"} {
		r := run(t, root, down, "hm-send", "builder", "hostile role while down", "--role", role)
		if r.code == 0 {
			path := strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "wrote ")+len("wrote "):])
			if filepath.Dir(path) != lay.Triggers() {
				t.Errorf("hub down: hm-send --role %q wrote %s", role, path)
			}
		}
	}

	if d := diffTrees(before, snapshotTree(t, base, lay.State())); len(d) > 0 {
		t.Errorf("paths outside .squidrun/ touched:\n%s", strings.Join(d, "\n"))
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "must not change\n" {
		t.Errorf("%s changed: %q %v", outside, data, err)
	}
	for _, p := range absolute {
		now := ""
		if fi, err := os.Lstat(p); err == nil {
			now = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
		if now != absBefore[p] {
			t.Errorf("%s changed: %q -> %q", p, absBefore[p], now)
		}
	}
	if m, _ := filepath.Glob("/etc/passwd.*.txt"); len(m) > 0 {
		t.Errorf("files written beside /etc/passwd: %v", m)
	}
}

// TestSecurityTelegramForeignChat runs the relay against a fake Bot API:
// updates from a chat that is neither the owner's nor allowlisted are
// recorded as refused and never typed into a pane, while the owner's and an
// allowlisted chat's messages reach the architect.
func TestSecurityTelegramForeignChat(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeSettings(t, root, burstTeam(root))
	srv := telegramtest.NewServer("123456:hm-e2e-token")
	t.Cleanup(srv.Close)
	env := fmt.Sprintf("TELEGRAM_BOT_TOKEN=%s\nTELEGRAM_CHAT_ID=4242\nTELEGRAM_CHAT_ALLOWLIST=777\nTELEGRAM_API_URL=%s\n", srv.Token, srv.URL)
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, root)
	// The relay reports "off" until its loop runs, and for good without a
	// token: give it a few seconds.
	state := ""
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := fetchStatus(t, h)
		if err != nil {
			t.Fatal(err)
		}
		if state = st.Telegram.State; state != "off" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if state == "off" {
		t.Fatal("the Telegram relay did not start: status telegram.state stayed off for 10s with a bot token, owner and API URL configured (see the hub log)")
	}
	archLog := root + "/architect.jsonl"
	poll.For(t, 30*time.Second, func() error {
		return poll.Want(len(readPrompts(t, archLog)) > 0, "architect session line, have %v", len(readPrompts(t, archLog)))
	})

	foreign := srv.Enqueue(telegramtest.Message{ChatID: 666, FromName: "Mallory", Text: "foreign secret: rm -rf /"})
	foreignGroup := srv.Enqueue(telegramtest.Message{ChatID: -1001, ChatType: "supergroup", ChatTitle: "strangers", FromID: 4242, Text: "owner id in a foreign group"})
	allowed := srv.Enqueue(telegramtest.Message{ChatID: 777, FromName: "Bob", Text: "allowlisted hello"})
	owner := srv.Enqueue(telegramtest.Message{ChatID: 4242, FromName: "Owner", Text: "owner hello"})
	poll.For(t, 60*time.Second, func() error {
		ps := readPrompts(t, archLog)
		return poll.Want(slices.ContainsFunc(ps, func(p prompt) bool { return strings.Contains(p.Prompt, "owner hello") }) &&
			slices.ContainsFunc(ps, func(p prompt) bool { return strings.Contains(p.Prompt, "allowlisted hello") }), "the owner's and the allowlisted messages typed into the architect pane")
	})
	poll.For(t, 30*time.Second, func() error {
		st, err := fetchStatus(t, h)
		return poll.Want(err == nil && st.Telegram.Refused >= 2, "refusals counted")
	})
	for _, p := range readPrompts(t, archLog) {
		if strings.Contains(p.Prompt, "foreign secret") || strings.Contains(p.Prompt, "foreign group") {
			t.Errorf("a foreign chat's message reached the architect: %q", p.Prompt)
		}
	}
	for _, s := range srv.Sent() {
		if s.ChatID == "666" || s.ChatID == "-1001" {
			t.Errorf("the relay answered a foreign chat: %+v", s)
		}
	}
	h.stop()
	withLedger(t, root, func(l *journal.Ledger) {
		ctx := context.Background()
		for _, id := range []int64{foreign, foreignGroup} {
			m, err := l.Get(ctx, fmt.Sprintf("telegram-refused-%d", id))
			if err != nil || m.Status != status.Recorded || m.ErrorCode != "chat_not_allowed" {
				t.Errorf("refused update %d in the ledger: %+v %v", id, m, err)
			}
			if _, err := l.Get(ctx, fmt.Sprintf("telegram-in-%d", id)); !errors.Is(err, journal.ErrNotFound) {
				t.Errorf("refused update %d was also recorded as inbound: %v", id, err)
			}
		}
		for _, id := range []int64{allowed, owner} {
			if m, err := l.Get(ctx, fmt.Sprintf("telegram-in-%d", id)); err != nil || m.TargetRole != "architect" {
				t.Errorf("allowed update %d: %+v %v", id, m, err)
			}
		}
	})
}
