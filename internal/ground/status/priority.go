package status

import "slices"

// Message priorities (the send frame's priority, comms_journal.priority).
// A send without one is normal; [URGENT] in a normal message makes it
// urgent.
const (
	PriorityNormal = "normal"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
	PriorityLow    = "low"
)

// Priorities lists every priority a sender may name.
var Priorities = []string{PriorityNormal, PriorityHigh, PriorityUrgent, PriorityLow}

// ValidPriority reports whether p is a priority a sender may name ("" is
// the default, normal).
func ValidPriority(p string) bool { return p == "" || slices.Contains(Priorities, p) }
