package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hm/broker/proto"
	"hm/internal/client"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
	"hm/internal/hub"
	"hm/triggers"
)

func nextMessage(t *testing.T, c *client.Client) proto.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		typ, raw, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for a message: %v", err)
		}
		if typ == "message" {
			var m proto.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
}

func writeTrigger(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func noPanes(o *hub.Options) { o.NoPanes = true }

// triggerHub starts a hub without panes for the trigger-file tests: its
// triggers/ directory, a listener for builder and the architect's token.
func triggerHub(t *testing.T) (th *testHub, dir string, builder *client.Client, archTok string) {
	t.Helper()
	th = startHub(t, hubConfig{opts: noPanes})
	return th, th.h.Layout.Triggers(), th.as("builder", true), th.h.Tokens.Issue("architect")
}

func TestHubTriggerFiles(t *testing.T) {
	t.Parallel()
	th, dir, builder, archTok := triggerHub(t)
	oracle := th.as("oracle", true)

	// hm-send's fallback form: explicit id, sender header with #0, signed
	// with the architect pane's token.
	if _, err := triggers.WriteSigned(dir, "builder", "t-1", "(ARCH #0): from a file", "architect", archTok); err != nil {
		t.Fatal(err)
	}
	m := nextMessage(t, builder)
	if m.MessageID != "t-1" || m.From != "architect" || m.Content != "(ARCH #1): from a file" {
		t.Fatalf("message = %+v", m)
	}
	poll.For(t, 30*time.Second, func() error { return poll.Want(row(t, th, "t-1").Channel == "trigger", "trigger row") })

	// Older tools: <target>.txt, no id, no signature → from "unverified",
	// marked.
	writeTrigger(t, dir, "oracle.txt", "plain note")
	if m := nextMessage(t, oracle); m.From != "unverified" || !strings.HasSuffix(m.Content, "[unverified sender] plain note") || !strings.HasPrefix(m.MessageID, "trg-") {
		t.Fatalf("plain = %+v", m)
	}
	// Group files.
	writeTrigger(t, dir, "all.txt", "(ARCH #5): everyone")
	for _, c := range []*client.Client{builder, oracle} {
		if m := nextMessage(t, c); !strings.Contains(m.Content, "everyone") {
			t.Fatalf("all.txt = %+v", m)
		}
	}
	writeTrigger(t, dir, "workers.x1.txt", "for the workers")
	if m := nextMessage(t, builder); !strings.Contains(m.Content, "for the workers") {
		t.Fatalf("workers = %+v", m)
	}
	writeTrigger(t, dir, "others-builder.txt", "(ARCH #0): not builder")
	if m := nextMessage(t, oracle); !strings.Contains(m.Content, "not builder") {
		t.Fatalf("others-builder = %+v", m)
	}
	// The same message (id, sender, body) again is not delivered twice.
	if _, err := triggers.Write(dir, "builder", "t-1x", "(ARCH #0): marker"); err != nil {
		t.Fatal(err)
	}
	writeTrigger(t, dir, "builder.replay.txt", "[HM-MESSAGE-ID:t-1]\n"+triggers.SignLine(archTok, "architect", "t-1", "(ARCH #0): from a file")+"\n(ARCH #0): from a file")
	if m := nextMessage(t, builder); m.MessageID != "t-1x" {
		t.Fatalf("expected marker, got %+v", m)
	}
	time.Sleep(0) // ordering above is the proof; nothing further is queued for builder
	poll.For(t, 30*time.Second, func() error {
		_, err := os.Stat(filepath.Join(dir, "builder.replay.txt"))
		return poll.Want(os.IsNotExist(err), "replayed file consumed")
	})

	// Every refusal lands in rejected/ with its reason.
	cases := map[string]struct{ content, reason string }{
		"nobody.txt":           {"hello", "invalid_target"},
		"architect.bg.txt":     {"(BUILDER-BG-1 #1): hi boss", "owner_binding_violation"},
		"builder.empty.txt":    {"  \n\x00\x01", "empty"},
		"builder.big.txt":      {strings.Repeat("x", 300<<10), "too_large"},
		"builder.forged.txt":   {"(NOBODY #1): who", "role_mismatch"},
		"others-nobody.txt":    {"hi", "invalid_target"},
		"builder-bg-2.now.txt": {"(BUILDER #0): are you there", "no_route"},
		// an id already in the ledger, from another sender: not dropped unseen
		"builder.dup.txt": {"[HM-MESSAGE-ID:t-1]\n(ARCH #0): from a file", "duplicate_id"},
	}
	for name, c := range cases {
		writeTrigger(t, dir, name, c.content)
	}
	for name, c := range cases {
		reasonPath := filepath.Join(dir, "rejected", name+".reason")
		poll.For(t, 30*time.Second, func() error {
			data, err := os.ReadFile(reasonPath)
			return poll.Want(err == nil && strings.Contains(string(data), c.reason), "%s rejected", name)
		})
		if _, err := os.Stat(filepath.Join(dir, "rejected", name)); err != nil {
			t.Errorf("%s not kept in rejected/: %v", name, err)
		}
	}
	// Binary garbage around text is cleaned, not refused.
	writeTrigger(t, dir, "oracle.bin.txt", "\x00\x1b[31mred\x07 alert\x00")
	if m := nextMessage(t, oracle); !strings.HasSuffix(m.Content, "[31mred alert") && !strings.Contains(m.Content, "red alert") {
		t.Fatalf("garbage = %q", m.Content)
	}
}

func TestHubDrainsTriggersWrittenWhileDown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	th := startHubAt(t, root, hubConfig{opts: noPanes})
	dir := th.h.Layout.Triggers()
	th.stop()
	for i, id := range []string{"down-1", "down-2", "down-3"} {
		if _, err := triggers.Write(dir, "oracle", id, "(BUILDER #0): queued while down "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	th2 := startHubAt(t, root, hubConfig{opts: noPanes})
	o := th2.as("oracle", true)
	// The ledger took them in the order they were written, and the
	// listener, which registers while the drain runs, gets them in that
	// order (its backlog before live deliveries).
	got := map[string]bool{}
	for _, id := range []string{"down-1", "down-2", "down-3"} {
		if m := nextMessage(t, o); m.MessageID != id {
			t.Fatalf("got %s, want %s", m.MessageID, id)
		}
		got[id] = true
	}
	var rows []int64
	for _, id := range []string{"down-1", "down-2", "down-3"} {
		m, err := th2.h.Ledger.Get(context.Background(), id)
		if !got[id] || err != nil {
			t.Fatalf("%s: delivered %v, in the ledger: %v", id, got[id], err)
		}
		rows = append(rows, m.RowID)
	}
	if !(rows[0] < rows[1] && rows[1] < rows[2]) {
		t.Fatalf("committed out of the order written: rows %v for down-1, down-2, down-3", rows)
	}
	// Replaying a delivered id is not delivered again.
	if _, err := triggers.Write(dir, "oracle", "down-2", "(BUILDER #0): queued while down b"); err != nil {
		t.Fatal(err)
	}
	if _, err := triggers.Write(dir, "oracle", "after", "(BUILDER #0): after"); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, o); m.MessageID != "after" {
		t.Fatalf("replayed id delivered again: %+v", m)
	}
}

func TestAttachUnknownPaneWithoutPanes(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes})
	url := strings.Replace(th.h.URL(), "ws://", "http://", 1) + "attach/architect?token=" + th.token()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "unknown pane") {
		t.Fatalf("attach without panes: %d %q", resp.StatusCode, body)
	}
}

// TestHubTriggerSignatures: a signed file's sender is its token's role; a
// signature that does not verify, or a signed claim the token does not
// cover, is refused with a reason; owner binding holds for signed files.
func TestHubTriggerSignatures(t *testing.T) {
	t.Parallel()
	th, dir, builder, archTok := triggerHub(t)
	oracleTok := th.h.Tokens.Issue("oracle")
	bgTok := th.h.Tokens.Issue("builder-bg-1")
	tests := []struct {
		name, role, token, content string
		from                       string // delivered from, "" when refused
		code                       string // refusal code
	}{
		{"pane token, own role", "architect", archTok, "(ARCH #0): signed by arch", "architect", ""},
		{"pane token, no header", "oracle", oracleTok, "no header", "oracle", ""},
		{"operator token claims any role", "oracle", th.token(), "as oracle by the operator", "oracle", ""},
		{"operator token, header names the sender", "user", th.token(), "(ARCH #0): operator as arch", "architect", ""},
		{"another role's token", "architect", oracleTok, "(ARCH #0): forged", "", "bad_signature"},
		{"unknown token", "architect", "not-a-token", "(ARCH #0): forged", "", "bad_signature"},
		{"header names another role", "oracle", oracleTok, "(ARCH #0): pretending", "", "role_mismatch"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("sig-%d", i)
			if _, err := triggers.WriteSigned(dir, "builder", id, tc.content, tc.role, tc.token); err != nil {
				t.Fatal(err)
			}
			if tc.code == "" {
				m := nextMessage(t, builder)
				if m.MessageID != id || m.From != tc.from || strings.Contains(m.Content, "[unverified sender]") {
					t.Fatalf("message = %+v, want %s from %s", m, id, tc.from)
				}
				return
			}
			name := "builder." + id + ".txt"
			poll.For(t, 30*time.Second, func() error {
				data, err := os.ReadFile(filepath.Join(dir, "rejected", name+".reason"))
				return poll.Want(err == nil && strings.HasPrefix(string(data), tc.code+"\n"), "%s rejected: %v %q", name, err, data)
			})
			if got := row(t, th, id); got.MessageID != "" {
				t.Errorf("refused file recorded: %+v", got)
			}
		})
	}
	// a background agent's signed file to anyone but its owner
	if _, err := triggers.WriteSigned(dir, "oracle", "sig-bg", "hi oracle", "builder-bg-1", bgTok); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		data, err := os.ReadFile(filepath.Join(dir, "rejected", "oracle.sig-bg.txt.reason"))
		return poll.Want(err == nil && strings.HasPrefix(string(data), "owner_binding_violation\n"), "owner binding")
	})
}

// TestHubTriggerUnsignedRefused: with triggers.allowUnsigned false, an
// unsigned file is refused with a reason while a signed one is delivered.
func TestHubTriggerUnsignedRefused(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes, settings: `{"triggers":{"allowUnsigned":false}}`})
	dir := th.h.Layout.Triggers()
	builder := th.as("builder", true)
	writeTrigger(t, dir, "builder.txt", "(ARCH #0): unsigned")
	if _, err := triggers.Write(dir, "builder", "plain-1", "(ARCH #0): unsigned with an id"); err != nil {
		t.Fatal(err)
	}
	if _, err := triggers.WriteSigned(dir, "builder", "signed-1", "(ARCH #0): signed", "architect", th.h.Tokens.Issue("architect")); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, builder); m.MessageID != "signed-1" || m.From != "architect" {
		t.Fatalf("message = %+v", m)
	}
	for _, name := range []string{"builder.txt", "builder.plain-1.txt"} {
		poll.For(t, 30*time.Second, func() error {
			data, err := os.ReadFile(filepath.Join(dir, "rejected", name+".reason"))
			return poll.Want(err == nil && strings.HasPrefix(string(data), "unsigned\n"), "%s refused: %v %q", name, err, data)
		})
	}
	if got := row(t, th, "plain-1"); got.MessageID != "" {
		t.Errorf("refused file recorded: %+v", got)
	}
}

// TestHubTriggerHardLinkToken: a hard link to runtime/hub-token placed in
// triggers/ is never typed or recorded.
func TestHubTriggerHardLinkToken(t *testing.T) {
	t.Parallel()
	th := startHub(t, hubConfig{opts: noPanes})
	dir := th.h.Layout.Triggers()
	builder := th.as("builder", true)
	tokPath := filepath.Join(th.root, ".squidrun", "runtime", "hub-token")
	if err := os.Link(tokPath, filepath.Join(dir, "builder.txt")); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		data, err := os.ReadFile(filepath.Join(dir, "rejected", "builder.txt.reason"))
		return poll.Want(err == nil && strings.HasPrefix(string(data), "multiple_links\n"), "hard link refused")
	})
	if _, err := triggers.Write(dir, "builder", "after-link", "after"); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, builder); m.MessageID != "after-link" || strings.Contains(m.Content, th.token()) {
		t.Fatalf("message = %+v", m)
	}
}

// TestHubTriggerRepeatLeavesTrace: a trigger file that repeats a message
// the ledger holds (the same id, sender and body; or, with another id, the
// same sender, number and body) is not delivered again, but it is not
// dropped unseen either (SPEC §7): the first copy gets a "repeated" event
// naming the file and the id it carried, and nothing lands in rejected/.
func TestHubTriggerRepeatLeavesTrace(t *testing.T) {
	t.Parallel()
	th, dir, builder, archTok := triggerHub(t)
	if _, err := triggers.WriteSigned(dir, "builder", "rep-1", "(ARCH #7): the words", "architect", archTok); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, builder); m.MessageID != "rep-1" {
		t.Fatalf("first copy = %+v", m)
	}
	// An unsigned file with an id line: stored with the hub's mark.
	writeTrigger(t, dir, "builder.u.txt", "[HM-MESSAGE-ID:rep-u]\nunsigned words")
	if m := nextMessage(t, builder); m.MessageID != "rep-u" {
		t.Fatalf("first unsigned copy = %+v", m)
	}
	tests := []struct {
		name  string
		first string // the message repeated
		id    string // the id the repeating file carries
		write func(file string)
	}{
		{"same id, sender and body (hm-send's fallback after a lost ACK)", "rep-1", "rep-1", func(string) {
			if _, err := triggers.WriteSigned(dir, "builder", "rep-1", "(ARCH #7): the words", "architect", archTok); err != nil {
				t.Fatal(err)
			}
		}},
		{"another id, same sender, number and body", "rep-1", "rep-2", func(string) {
			if _, err := triggers.WriteSigned(dir, "builder", "rep-2", "(ARCH #7): the words", "architect", archTok); err != nil {
				t.Fatal(err)
			}
		}},
		{"unsigned, same id and body", "rep-u", "rep-u", func(file string) {
			writeTrigger(t, dir, file, "[HM-MESSAGE-ID:rep-u]\nunsigned words")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "builder." + tc.id + ".txt"
			tc.write(file)
			poll.For(t, 30*time.Second, func() error {
				evs, _, _, err := th.h.Ledger.MessageChain(context.Background(), tc.first)
				if err != nil {
					return err
				}
				for _, e := range evs {
					if e.Event == status.EventRepeated && strings.Contains(e.Detail, `"file":"`+file+`"`) && strings.Contains(e.Detail, `"messageId":"`+tc.id+`"`) {
						return nil
					}
				}
				return poll.Want(false, "no repeated event for %s on %s: %+v", file, tc.first, evs)
			})
			if _, err := os.Stat(filepath.Join(dir, file)); !os.IsNotExist(err) {
				t.Errorf("%s still in triggers/: %v", file, err)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "rejected")); len(ents) != 0 {
				t.Errorf("rejected/ holds %d entries", len(ents))
			}
		})
	}
}

// TestHubTriggerSizeLimit: a trigger file of exactly the limit (256 KiB,
// SPEC §7) is delivered, also unsigned, where the hub puts its
// "[unverified sender]" mark before it; one byte more is refused as
// too_large with its reason.
func TestHubTriggerSizeLimit(t *testing.T) {
	t.Parallel()
	_, dir, builder, archTok := triggerHub(t)
	signed := func(id string, size int) string {
		head := "[HM-MESSAGE-ID:" + id + "]\n"
		sig := triggers.SignLine(archTok, "architect", id, "") // only its length counts here
		body := strings.Repeat("s", size-len(head)-len(sig)-1)
		return head + triggers.SignLine(archTok, "architect", id, body) + "\n" + body
	}
	tests := []struct {
		name, file, content string
		delivered           bool
	}{
		{"unsigned, exactly the limit", "builder.u0.txt", strings.Repeat("u", triggers.DefaultMaxBytes), true},
		{"unsigned, one byte over", "builder.u1.txt", strings.Repeat("u", triggers.DefaultMaxBytes+1), false},
		{"signed, exactly the limit", "builder.s0.txt", signed("s0", triggers.DefaultMaxBytes), true},
		{"signed, one byte over", "builder.s1.txt", signed("s1", triggers.DefaultMaxBytes+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.content) != triggers.DefaultMaxBytes && len(tc.content) != triggers.DefaultMaxBytes+1 {
				t.Fatalf("test file is %d bytes", len(tc.content))
			}
			writeTrigger(t, dir, tc.file, tc.content)
			if tc.delivered {
				m := nextMessage(t, builder)
				if !strings.Contains(m.Content, tc.content[len(tc.content)-100:]) {
					t.Fatalf("delivered %d bytes ending %q", len(m.Content), m.Content[max(0, len(m.Content)-20):])
				}
				return
			}
			reason := filepath.Join(dir, "rejected", tc.file+".reason")
			poll.For(t, 30*time.Second, func() error {
				data, err := os.ReadFile(reason)
				return poll.Want(err == nil && strings.HasPrefix(string(data), "too_large\n") && strings.Contains(string(data), "limit"), "%s rejected as too_large: %v %q", tc.file, err, data)
			})
		})
	}
}
