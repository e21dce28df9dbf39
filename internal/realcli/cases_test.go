package realcli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hm/agent"
	"hm/broker/proto"
)

// suiteCase is one case of the suite, run in sequence in every pane
// (TestRealCLIs/<cli>/<mode>/<case>). Cases known to fail until other
// work lands are listed in docs/operations.md, not skipped.
type suiteCase struct {
	name string
	run  func(t *testing.T, r *paneRun)
}

var suiteCases = []suiteCase{
	{"short", func(t *testing.T, r *paneRun) {
		r.check(t, r.send(t, "a short message from the suite"))
	}},
	{"multiline", func(t *testing.T, r *paneRun) {
		r.check(t, r.send(t, lines("three lines", 3)))
		r.check(t, r.send(t, lines("ten lines", 10)))
	}},
	{"sizes", func(t *testing.T, r *paneRun) {
		r.check(t, r.send(t, oneLine(2500)))
		r.check(t, r.send(t, lines("five KB", 5000/80)))
		r.check(t, r.send(t, lines("eight KB", 8000/80)))
	}},
	{"tricky", func(t *testing.T, r *paneRun) {
		r.check(t, r.send(t, `quotes: it's "double" and 'single'; backticks `+"`ls -la`"+`; $(echo pwned) ${HOME} $PATH; `+
			`a backslash \ and \n; unicode: héllo wörld, 日本語テキスト, emoji 👍🏽 and 👨‍👩‍👧, arrows → ⇒ end`))
		// No tab: Claude Code turns a pasted tab into spaces (docs/operations.md).
	}},
	{"burst", func(t *testing.T, r *paneRun) {
		var ms []sentMsg
		for i := 1; i <= 5; i++ {
			ms = append(ms, r.send(t, fmt.Sprintf("burst message %d of 5", i)))
		}
		r.check(t, ms...)
	}},
	{"shell", caseShell},
	{"urgent", caseUrgent},
	{"person", casePerson},
	{"hubkill", caseHubKill},
	{"restart", caseRestart},
	{"stop", caseStop},
}

// lines is a body of n lines of about 80 bytes.
func lines(title string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s, line %02d of %02d: %s", title, i, n, strings.Repeat("lorem ipsum ", 5))
	}
	return b.String()
}

// oneLine is a one-line body of about n bytes.
func oneLine(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "word%04d ", i)
	}
	return strings.TrimSpace(b.String())
}

// caseShell: the model answers with a shell tool call that runs hm-send;
// architect gets the reply.
func caseShell(t *testing.T, r *paneRun) {
	tok := fmt.Sprintf("tok-%s-%d", r.prefix, time.Now().UnixNano())
	r.check(t, r.send(t, "please answer: "+shellWord+" "+tok))
	if err := r.awaitReply(t, "reply "+tok); err != nil {
		t.Errorf("the agent's hm-send: %v\n%s", err, r.evidence())
	}
}

// awaitReply waits for a message to architect whose body holds text.
func (r *paneRun) awaitReply(t *testing.T, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryWait)
	defer cancel()
	for {
		var res proto.InboxResult
		if err := query(ctx, r.arch, proto.QueryInbox, proto.InboxQuery{}, &res); err != nil {
			return err
		}
		for _, m := range res.Messages {
			if strings.Contains(m.Body, text) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no message to architect holds %q (%d in the inbox)", text, len(res.Messages))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// caseUrgent: an [URGENT] message while the model works on a 10 s turn.
func caseUrgent(t *testing.T, r *paneRun) {
	slow := r.send(t, "work on this for a while: "+slowWord)
	r.awaitModel(deliveryWait, slow)
	urgent := r.send(t, "[URGENT] stop and read this now")
	r.check(t, slow, urgent)
	r.settle(t)
}

// casePerson: a person types in hm attach while a message arrives; both
// reach the model, each alone.
func casePerson(t *testing.T, r *paneRun) {
	person := newTerm(t, env(t, r.root), hmBin(t, "hm"), "attach", "builder")
	time.Sleep(time.Second) // attached
	const said = "the person at the keyboard says hello"
	half := len(said) / 2
	for _, c := range said[:half] {
		if err := person.keys(string(c)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	m := r.send(t, "a message while a person types")
	for _, c := range said[half:] {
		if err := person.keys(string(c)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if err := person.key("Enter"); err != nil {
		t.Fatal(err)
	}
	r.check(t, m)
	deadline := time.Now().Add(deliveryWait)
	for len(promptSightings(r.reqs(), said)) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	ps := promptSightings(r.reqs(), said)
	switch {
	case len(ps) != 1:
		t.Errorf("the person's prompt reached the model %d times, want once (%s)\n--- attach:\n%s\n%s", len(ps), seqs(ps), person.screen(), r.evidence())
	case ps[0].merged:
		t.Errorf("the person's prompt was merged with an hm message: %q\n%s", clip(ps[0].part), r.evidence())
	}
	r.settle(t)
}

// caseRestart: the CLI is killed while messages wait in the queue behind
// a long turn; the pane restarts it and they reach the new one. With
// hooks the CLI reported its session (SessionStart's session_id), so the
// new program resumes it (the profile's resume form: hm status says
// resumed); typing only, it starts blank (restarted) (#37).
func caseRestart(t *testing.T, r *paneRun) {
	slow := r.send(t, "a long task: "+slowWord)
	r.awaitModel(deliveryWait, slow)
	queued := []sentMsg{r.send(t, "queued before the restart, first"), r.send(t, "queued before the restart, second")}
	time.Sleep(time.Second)
	before := len(r.reqs())
	r.killCLI(t)
	r.check(t, append([]sentMsg{slow}, queued...)...)
	r.settle(t)
	want := map[bool]string{false: "restarted", true: "resumed"}[r.hooks]
	if p, err := r.hub.pane(context.Background()); err != nil || p.Origin != want || p.Restarts != 1 {
		t.Errorf("after the kill, builder's pane: origin %q, %d restarts (%v); want %s, 1\n%s", p.Origin, p.Restarts, err, want, r.evidence())
	}
	// A resumed CLI sends the conversation it had: the long task's
	// prompt, typed before the kill, is in its turns again; a blank one
	// never saw it. Gemini CLI resumed without that prompt in 1 of 6
	// runs (the kill came while its turn waited for the model, and its
	// session file did not hold the prompt yet): logged, not failed.
	carried := false
	for _, q := range r.reqs()[before:] {
		carried = carried || (q.Main && bytes.Contains(q.Body, []byte(agent.Trailer(slow.id))))
	}
	switch {
	case carried == r.hooks:
	case r.cli.name == "gemini" && r.hooks:
		t.Logf("the resumed Gemini CLI's turns do not hold the prompt it had when it was killed (its session file did not have it yet)")
	default:
		t.Errorf("the restarted CLI's turns hold the prompt typed before the kill: %v, want %v (%s)", carried, r.hooks, want)
	}
}

// settle waits for the pane to be ready again with nothing queued, so the
// next case starts from a quiet pane; a pane that does not settle fails
// the case.
func (r *paneRun) settle(t *testing.T) {
	t.Helper()
	if err := r.waitReady(context.Background(), deliveryWait); err != nil {
		t.Errorf("the pane did not settle: %v\n%s", err, r.evidence())
	}
}

// caseStop: once the hub stopped, no process the pane's CLI started is
// left running (issue #32 item 7: Codex's app-server daemons leave the
// pane's session). Survivors are killed after being named.
func caseStop(t *testing.T, r *paneRun) {
	r.hub.stop()
	deadline := time.Now().Add(10 * time.Second)
	ps := paneProcesses(r.home)
	for len(ps) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		ps = paneProcesses(r.home)
	}
	if len(ps) > 0 {
		t.Errorf("%d processes of the pane outlived the hub's stop: %v", len(ps), r.endSurvivors())
	}
}
