//go:build !race

package journal

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
