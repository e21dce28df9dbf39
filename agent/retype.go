package agent

import (
	"errors"
	"fmt"
	"time"
)

// typeAgain ends a typing that the run cut short before the message's
// Enter (when says where the typing was, err is the write's error if any)
// and returns false: the message stays at the head of the queue and is
// typed again, whole, into the next run. It waits (up to a second) for the
// run to end, so that the retry types into a new one. When the program
// exited, the delivery reports StageRetyping, so that the ledger says why
// the message is typed again; when the pane is stopping, the message stays
// undelivered (see Undelivered) and nothing is reported.
func (p *Pane) typeAgain(pr *proc, it *item, stage func(StageKind, error) Stage, when string, err error) bool {
	p.pause(pr, time.Second, &it.waited)
	why := p.endReason(pr)
	if !errors.Is(why, ErrPaneExited) {
		p.log.Info("message not submitted; typing it again", "id", it.d.MessageID, "when", when, "why", why, "err", err)
		return false
	}
	cut := fmt.Errorf("%w while the message was being typed, %s: typed again, whole, after the restart", ErrPaneExited, when)
	p.log.Info("program ended while a message was being typed; typing it again after restart", "id", it.d.MessageID, "when", when, "err", err)
	p.report(it, stage(StageRetyping, cut))
	return false
}
