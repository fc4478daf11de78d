//go:build race

package server

// raceEnabled skips allocation counts, which the race detector's instrumentation changes.
const raceEnabled = true
