//go:build !race

package testutil

// Race reports whether the race detector is on.
const Race = false
