package cli

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"hm/internal/ground/hooknote"
	"hm/internal/ground/layout"
	"hm/internal/ground/poll"
	"hm/internal/ground/status"
)

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestHookNoteOutlivesTheHub: the hub dies between a hook's claim and its
// claim-ack, after the hook printed the message into the agent's context
// (the real-CLI hubkill case saw the agent get it twice: from that hook
// and again from the next hub). The hook leaves a note; the next hub reads
// it before it re-routes what is pending and records the message
// delivered.context (recovered) instead of handing it to the agent again,
// then removes the note.
func TestHookNoteOutlivesTheHub(t *testing.T) {
	t.Parallel()
	hh, stop := startHookHubStop(t, neverReady)
	lay := layout.Layout{Root: hh.root}
	hh.drainSession(t)
	sendTo(t, hh.sender(t, "architect"), "builder", "noted-1", "(ARCH #1): printed as the hub died")
	hh.waitQueued(t, 1)

	// The hook's output reaches the CLI, and the hub dies before the
	// claim-ack.
	var out, errb bytes.Buffer
	vars := hh.env()
	w := writerFunc(func(p []byte) (int, error) {
		stop()
		return out.Write(p)
	})
	code := MainContext(context.Background(), []string{"hook", "claude", "PostToolUse"},
		Env{Stdin: strings.NewReader("{}"), Stdout: w, Stderr: &errb, Getenv: func(k string) string { return vars[k] }})
	if code != ExitOK || errb.Len() > 0 || !strings.Contains(out.String(), "[hm:noted-1]") {
		t.Fatalf("hm hook: exit %d, stderr %q, stdout %q; want the message printed, exit 0", code, errb.String(), out.String())
	}
	notes, err := hooknote.Read(lay.HookNotes())
	if err != nil || len(notes) != 1 || notes[0].Err != nil {
		t.Fatalf("hook notes after the hub died: %+v %v; want one", notes, err)
	}
	if n := notes[0].Note; n.Role != "builder" || n.Hook != "claude PostToolUse" || !slices.Equal(n.IDs, []string{"noted-1"}) {
		t.Errorf("note %+v, want builder's claude PostToolUse printing noted-1", n)
	}
	if fi, err := os.Stat(notes[0].Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("note file: %v %v, want mode 0600", fi.Mode(), err)
	}

	h2 := hookHubAgain(t, hh.root)
	poll.For(t, 20*time.Second, func() error {
		m, err := h2.Ledger.Get(context.Background(), "noted-1")
		if err != nil {
			return err
		}
		return poll.Want(m.AckStatus == status.DeliveredContext, "noted-1 is %s/%s, want delivered.context", m.Status, m.AckStatus)
	})
	evs, err := h2.Ledger.Events(context.Background(), "noted-1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		names = append(names, string(e.Event))
	}
	if !slices.Equal(names, []string{string(status.EventBrokered), string(status.EventContext)}) || !strings.Contains(string(evs[len(evs)-1].Detail), `"from":"hook note"`) {
		t.Errorf("noted-1's events %v (last %s), want brokered then context, recovered from the note", names, evs[len(evs)-1].Detail)
	}
	// Nothing of it is left for the new hub's hooks (or pane) to hand out.
	h2hook := &hookHub{Hub: h2.Hub, root: hh.root}
	if out := h2hook.hook(t, "claude", "PostToolUse", []byte("{}")); strings.Contains(out, "[hm:noted-1]") {
		t.Errorf("a hook under the new hub printed noted-1 again:\n%s", out)
	}
	if left, _ := hooknote.Read(lay.HookNotes()); len(left) != 0 {
		t.Errorf("notes left after the next hub read them: %+v", left)
	}
}
