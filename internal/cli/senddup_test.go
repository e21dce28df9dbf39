package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"hm/internal/hub"
	"hm/internal/hub/hubtest"
)

// TestSendRepeatedHeaderAndBody: hm-send of a message whose sender, header
// number and body repeat an earlier one (SPEC §2: a duplicate, not
// delivered again, ACKed ok with "dedupe":true) prints its ACK at once and
// exits 0. The hub's ACK repeats the first copy, whose messageId is not
// the one this hm-send chose: before the fix hm-send waited for an ACK
// with its own id, fell back after its timeout (exit 0, a trigger file)
// or, with --no-fallback, exited 1.
func TestSendRepeatedHeaderAndBody(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	port := strconv.Itoa(h.Port)
	send := func(extra ...string) (int, string, string, time.Duration) {
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		args := append([]string{"send", "--root", root, "--port", port, "--timeout", "3s", "--role", "architect", "oracle", "(ARCH #1): the parser is done"}, extra...)
		start := time.Now()
		code := MainContext(t.Context(), args, env)
		return code, out.String(), errb.String(), time.Since(start)
	}
	if code, out, errOut, _ := send(); code != ExitOK || out != "accepted for oracle (accepted.unverified, seq 1): queued; seen by the agent once its CLI reports it (hooks: hm init)\n" {
		t.Fatalf("first send: exit %d stdout %q stderr %q", code, out, errOut)
	}
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"plain", nil, "accepted for oracle (accepted.unverified, seq 1): queued; seen by the agent once its CLI reports it (hooks: hm init)\n"},
		{"no fallback", []string{"--no-fallback"}, "accepted for oracle (accepted.unverified, seq 1): queued; seen by the agent once its CLI reports it (hooks: hm init)\n"},
		{"json", []string{"--json"}, `"dedupe":true`},
	} {
		code, out, errOut, took := send(tc.extra...)
		if code != ExitOK || !strings.Contains(out, tc.want) || errOut != "" || took > 2*time.Second {
			t.Errorf("%s: exit %d in %s, stdout %q (want %q), stderr %q", tc.name, code, took, out, tc.want, errOut)
		}
	}
}

// TestSendJSONRefusalReason: a refused send exits 1 with the reason on
// stderr (SPEC §12) with --json too, where stdout carries the ACK. Before
// the fix --json printed the ACK and said nothing on stderr.
func TestSendJSONRefusalReason(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h, _ := hubtest.Start(t, root, hub.Options{NoPanes: true, HandoffEvery: time.Hour})
	port := strconv.Itoa(h.Port)
	for _, tc := range []struct {
		target, code string
	}{
		{"nobody", "invalid_target"},
		{"builder-bg-1", "no_route"},
		{"telegram", "telegram_unconfigured"},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := MainContext(t.Context(), []string{"send", "--root", root, "--port", port, "--json", tc.target, "hello"}, env)
		if code != ExitFailed || !strings.Contains(out.String(), `"status":"`+tc.code+`"`) || !strings.Contains(errb.String(), "refused: "+tc.code) {
			t.Errorf("hm send --json %s: exit %d, stdout %q, stderr %q; want 1, the ACK, and the refusal on stderr", tc.target, code, out.String(), errb.String())
		}
	}
}
