//go:build race

package logfmt

// raceEnabled skips allocation counts: under the race detector sync.Pool drops buffers at random.
const raceEnabled = true
