//go:build race

package server_test

// raceOn skips allocation counts, which the race detector's instrumentation changes.
const raceOn = true
