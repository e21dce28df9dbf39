// Package paneevents names what a pane tells its caller about one message
// it types: one callback per event, in one struct that the broker fills
// (each writing the ledger's row for its event), the hub passes on
// untouched and the agent package calls. It depends on nothing of hm.
package paneevents

// Callbacks are the events of one message's typing into a pane; each is
// optional (nil: not wanted). The agent package says on which goroutine
// and in which order each runs (agent.Delivery).
type Callbacks struct {
	// Typed: the whole text is in the pane and showed, just before the
	// Enter delay; it returns after the caller recorded the typing (the
	// Enter waits for it).
	Typed func()
	// Submitted: right after the first Enter was written (proven false),
	// and once more if the program was then seen to take it (proven
	// true).
	Submitted func(proven bool)
	// Failed: the message could not be typed at all.
	Failed func(err error)
	// Stuck: repeated attempts did not get it submitted.
	Stuck func(err error)
	// Retyping: the program ended while it was typed, before its Enter;
	// it is typed again, whole, into the next run.
	Retyping func(err error)
	// Interrupted: the pane's busy program was interrupted for this
	// (urgent) message.
	Interrupted func()
	// Cleared: after that interrupt the program's input held text hm did
	// not type (held), and hm erased it before typing.
	Cleared func(held string)
}

// Wrap returns c with afterTyped run after Typed (the typing recorded,
// before the Enter) and beforeSubmitted run before the unproven Submitted
// (the Enter written, not yet recorded); nil adds nothing. The hub's fault
// injection, which kills the hub at those two moments, wraps a message's
// callbacks with it.
func (c Callbacks) Wrap(afterTyped, beforeSubmitted func()) Callbacks {
	if afterTyped != nil {
		typed := c.Typed
		c.Typed = func() {
			if typed != nil {
				typed()
			}
			afterTyped()
		}
	}
	if beforeSubmitted != nil {
		submitted := c.Submitted
		c.Submitted = func(proven bool) {
			if !proven {
				beforeSubmitted()
			}
			if submitted != nil {
				submitted(proven)
			}
		}
	}
	return c
}
