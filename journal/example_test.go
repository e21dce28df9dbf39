package journal_test

import (
	"errors"
	"fmt"

	"hm/internal/ground/status"
	"hm/journal"
)

// Each ledger event is built by one constructor; the Change says what the
// event does to the message row.
func ExampleSubmitted() {
	c := journal.Submitted("hm-1", "builder", true)
	fmt.Println(c.Event, c.Status, c.AckStatus, c.Detail["pane"], c.Detail["proven"])
	c = journal.Submitted("hm-2", "builder", false)
	fmt.Println(c.Event, c.Status, c.AckStatus)
	// Output:
	// submitted routed submitted builder true
	// submitted routed accepted.unverified
}

// A stuck message keeps its status, so a message never typed stays
// pending and is typed again after a restart.
func ExampleStuck() {
	c := journal.Stuck("hm-1", "builder", errors.New("no reaction to Enter"))
	fmt.Printf("event=%s status=%q ack=%s error=%q\n", c.Event, c.Status, c.AckStatus, c.Detail["error"])
	// Output:
	// event=stuck status="" ack=stuck error="no reaction to Enter"
}

// Merge applies a change monotonically: a later, lower stage never
// overwrites a higher one.
func ExampleMerge() {
	row := journal.Message{MessageID: "hm-1", Status: status.Brokered}
	row, changed := journal.Merge(row, journal.Acked("hm-1", "builder", ""))
	fmt.Println(changed, row.Status, row.AckStatus)
	row, changed = journal.Merge(row, journal.Typed("hm-1", "builder"))
	fmt.Println(changed, row.Status, row.AckStatus)
	// Output:
	// true acked delivered.verified
	// false acked delivered.verified
}

// ChangeRules is the whole table: one rule per constructor.
func ExampleChangeRules() {
	for _, r := range journal.ChangeRules()[:3] {
		fmt.Println(r.Name, r.Event, r.Keys)
	}
	// Output:
	// Typed typed [pane]
	// Submitted submitted [pane proven]
	// EnteredBeforeStop submitted [pane proven from]
}
