//go:build race

package upstream

// raceEnabled skips allocation counts, which the race detector's instrumentation changes.
const raceEnabled = true
