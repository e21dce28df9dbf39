//go:build !race

package agent

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
