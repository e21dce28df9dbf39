//go:build !race

package broker_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
